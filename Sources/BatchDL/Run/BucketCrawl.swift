import BatchDLManifest
import BatchDLPlan
import BatchDLSupport
import BatchDLTransfer

/// The listings of bucket indexes (`index:` on the URL of an `aws_sigv4` session): ListObjectsV2
/// pages of the prefix, flat, each page after the one whose continuation token names it. The
/// pages of every bucket are fetched together, one round per page number, by the same engine
/// jobs as every document (signed, bounded, conditional, stored). The objects then become the
/// index's folders (`S3Bucket.folders`), so include, exclude, depth and names are an index's.
extension Descriptors {
  /// The most pages of one bucket listing fetched (1,000 keys a page).
  static let maxBucketPages = 10_000

  /// An entry whose documents are crawled before planning: its spec, its key in the
  /// `DescriptorSet`, and the session (and its index) that fetches them.
  struct CrawledEntry<Spec> {
    var key: String
    var spec: Spec
    var session: Session
    var sessionIndex: Int
  }

  typealias BucketItem = CrawledEntry<IndexSpec>

  /// The crawls of `items`, by their keys.
  static func crawlBuckets(
    _ items: [BucketItem], fetcher: inout DocumentFetcher, manifest: Manifest
  ) -> [String: IndexCrawl] {
    struct Progress {
      var bucket: S3Bucket?
      var token: String?
      /// The continuation tokens followed so far: a page naming one of them again loops.
      var tokens: Set<String> = []
      var objects: [S3ListedObject] = []
      var crawl = IndexCrawl()
      var done = false
    }
    let limits = DirectoryIndex.CrawlLimits()
    var progress: [Progress] = items.map { item in
      var state = Progress()
      do throws(S3ListingProblem) {
        state.bucket = try S3Bucket(url: item.spec.url)
      } catch {
        state.crawl.pages.append(
          ListingPage(url: fetcher.redactor.url(item.spec.url), outcome: .failed, failure: error.message))
        state.done = true
      }
      return state
    }
    var round = 0
    while progress.contains(where: { !$0.done }) {
      round += 1
      for (number, item) in items.enumerated() where !progress[number].done {
        guard let bucket = progress[number].bucket else { continue }
        fetcher.want(
          bucket.listURL(continuationToken: progress[number].token), session: item.session,
          sessionIndex: item.sessionIndex, headers: item.spec.headers, limit: S3Listing.maxBytes, origin: item.spec.url)
      }
      fetcher.fetchWanted()
      for (number, item) in items.enumerated() where !progress[number].done {
        guard let bucket = progress[number].bucket else { continue }
        let url = bucket.listURL(continuationToken: progress[number].token)
        let key = DescriptorSet.key(of: url, for: item.session, in: manifest)
        let document = fetcher.documents[key] ?? FetchedDocument(outcome: .missing)
        progress[number].done = true
        var unreadable: String?
        if let body = document.body {
          switch S3Listing.parse(body) {
          case .success(let listed):
            progress[number].objects += listed.objects
            if listed.isTruncated, let next = listed.nextContinuationToken {
              if progress[number].tokens.insert(next).inserted {
                progress[number].token = next
                progress[number].done = false
              } else {
                progress[number].crawl.limitProblem =
                  "the bucket listing names a continuation token it named before ('\(ShownText.escaped(next, limit: 80))'): the server would answer the same pages forever; the objects of the pages read are kept, the listing stops here"
              }
            }
          case .failure(let problem):
            unreadable = "cannot read it as an S3 listing: \(problem.message)"
          }
        }
        let page = listingPage(document, url: fetcher.redactor.url(url), unreadable: unreadable)
        progress[number].crawl.pages.append(page)
        if !progress[number].done
          && (round >= maxBucketPages || progress[number].objects.count > limits.maxEntries)
        {
          progress[number].crawl.limitProblem =
            progress[number].objects.count > limits.maxEntries
            ? "the bucket lists more than \(limits.maxEntries) objects under the prefix, the most batchdl reads of one index; the rest are left out"
            : "the bucket listing goes on past \(maxBucketPages) pages, the most batchdl reads of one index; the rest are left out"
          progress[number].done = true
        }
      }
    }
    var crawls: [String: IndexCrawl] = [:]
    for (number, item) in items.enumerated() {
      var crawl = progress[number].crawl
      if let bucket = progress[number].bucket {
        crawl.folders = bucket.folders(
          objects: progress[number].objects, indexURL: item.spec.url, depth: item.spec.depth,
          display: fetcher.redactor.url(item.spec.url))
      }
      crawls[item.key] = crawl
    }
    return crawls
  }
}
