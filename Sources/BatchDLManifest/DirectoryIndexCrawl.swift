#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

extension DirectoryIndex {
  /// `include:` and `exclude:` of an `index:` task: glob patterns matched with the C library's
  /// `fnmatch(3)` against an entry's path relative to the index URL (`sub folder/inner.txt`,
  /// decoded, without a leading `/`).
  ///
  /// - `*`, `?` and `[...]` are fnmatch's, with `FNM_PATHNAME`: they never match `/`. A leading
  ///   dot is matched like any other character (`*` matches `.hidden`), case matters, and `\`
  ///   quotes the next character.
  /// - A pattern without `/` matches the name at any depth (`*.iso` matches `a.iso` and
  ///   `sub/b.iso`). A pattern with `/` matches the whole relative path (`sub/*.iso` matches
  ///   `sub/b.iso`, not `a/sub/b.iso` nor `sub/deeper/c.iso`); a leading `/` only anchors it
  ///   (`/a.iso` is `a.iso` at the top and nowhere else).
  /// - `**` is not supported: fnmatch reads it as `*`, which stops at `/`, so it is refused
  ///   (`patternProblem`) rather than silently match less than it says.
  /// - A pattern ending with `/` matches folders only (`exclude: [tmp/]`).
  /// - A file is selected when it matches an `include` pattern (or `include` is empty) and no
  ///   `exclude` pattern. A folder that matches an `exclude` pattern is not fetched, and nothing
  ///   under it is selected (`exclude: [old]` leaves out the folder `old` and all it holds);
  ///   `include` patterns never stop a folder from being fetched.
  public struct Filter: Hashable, Sendable {
    public var include: [String]
    public var exclude: [String]

    public init(include: [String] = [], exclude: [String] = []) {
      self.include = include
      self.exclude = exclude
    }

    /// Why `pattern` cannot be an `include:`/`exclude:` pattern, or nil.
    public static func patternProblem(_ pattern: String) -> String? {
      if pattern.isEmpty || pattern.allSatisfy({ $0 == "/" }) { return "is empty" }
      if pattern.utf8.contains(0) { return "contains a NUL byte" }
      if pattern.utf8.count > PathRules.maxPathBytes { return "is longer than \(PathRules.maxPathBytes) bytes" }
      if pattern.contains("**") {
        return
          "uses '**', which batchdl's globs (fnmatch) do not have: '*' never matches '/'; a pattern without '/' matches a name at any depth"
      }
      return nil
    }

    /// Whether the file at `path` (relative to the index URL) is selected.
    public func selects(file path: String) -> Bool {
      if !include.isEmpty && !include.contains(where: { Self.matches($0, path: path, isFolder: false) }) {
        return false
      }
      return !exclude.contains { Self.matches($0, path: path, isFolder: false) }
    }

    /// Whether the folder at `path` (relative to the index URL, without a trailing `/`) is
    /// fetched: no `exclude` pattern matches it.
    public func enters(folder path: String) -> Bool {
      !exclude.contains { Self.matches($0, path: path, isFolder: true) }
    }

    /// Whether `pattern` matches `path` by the rules above.
    static func matches(_ pattern: String, path: String, isFolder: Bool) -> Bool {
      var pattern = Substring(pattern)
      var folderOnly = false
      while pattern.hasSuffix("/") {
        pattern = pattern.dropLast()
        folderOnly = true
      }
      if folderOnly && !isFolder { return false }
      var anchored = false
      while pattern.hasPrefix("/") {
        pattern = pattern.dropFirst()
        anchored = true
      }
      if pattern.isEmpty { return false }
      let subject: Substring
      if anchored || pattern.contains("/") {
        subject = Substring(path)
      } else {
        subject = path.lastIndex(of: "/").map { path[path.index(after: $0)...] } ?? Substring(path)
      }
      return fnmatch(String(pattern), String(subject), FNM_PATHNAME) == 0
    }
  }

  /// The bounds of one `index:` task's crawl.
  public struct CrawlLimits: Hashable, Sendable {
    /// The most folder pages fetched, the index's own included.
    public var maxFolders: Int
    /// The most entries all the pages may list together.
    public var maxEntries: Int

    public init(maxFolders: Int = 10_000, maxEntries: Int = 1_000_000) {
      self.maxFolders = maxFolders
      self.maxEntries = maxEntries
    }
  }

  /// A folder page the caller has fetched (or tried to).
  public struct FetchedFolder: Sendable {
    /// The folder's path relative to the index URL, without a trailing `/`: `""` for the index
    /// folder, `sub folder/deeper` below it (decoded).
    public var path: String
    /// The URL it was fetched from.
    public var url: String
    /// What it listed; nil when it could not be fetched or read (it is not asked for again).
    public var listing: Listing?

    public init(path: String, url: String, listing: Listing?) {
      self.path = path
      self.url = url
      self.listing = listing
    }

    /// Its level: 1 for the index folder, 2 for a folder in it, ...
    public var level: Int { path.isEmpty ? 1 : path.utf8.reduce(2) { $1 == 0x2F ? $0 + 1 : $0 } }
  }

  /// A folder page to fetch next.
  public struct PendingFolder: Hashable, Sendable {
    /// Its path relative to the index URL (`""` for the index folder), as `FetchedFolder.path`.
    public var path: String
    /// Its URL, ending with `/`.
    public var url: String
    /// 1 for the index folder, 2 for a folder in it, ...
    public var level: Int
  }

  /// What `nextFolders` answers.
  public struct CrawlStep: Sendable {
    /// The folders to fetch now, in the order their pages list them; empty when the crawl is
    /// over.
    public var next: [PendingFolder]
    /// Set when a limit stopped the crawl (or left folders out of `next`): the listing is
    /// incomplete, and the message says which limit.
    public var limitProblem: String?
  }

  /// The folder pages to fetch next for `depth` (`1`: the index folder only; `2`: and the
  /// folders it lists; ...), given the pages fetched so far: with none, the index folder itself;
  /// after that, each folder listed by a fetched page whose level is below `depth`, that `filter`
  /// enters and that is not fetched yet. Called again with the pages of each step added, it
  /// crawls level by level, and ends (an empty `next`) after at most `depth` steps. At most
  /// `limits.maxFolders` pages are fetched in all, and no more are asked for once the pages
  /// fetched list `limits.maxEntries` entries together.
  public static func nextFolders(
    indexURL: String, fetched: [FetchedFolder], depth: Int, filter: Filter, limits: CrawlLimits = CrawlLimits()
  ) -> CrawlStep {
    if fetched.isEmpty {
      return CrawlStep(next: [PendingFolder(path: "", url: indexURL, level: 1)], limitProblem: nil)
    }
    var known = Set(fetched.map(\.path))
    var entries = 0
    for folder in fetched { entries += folder.listing?.entries.count ?? 0 }
    if entries > limits.maxEntries {
      return CrawlStep(
        next: [],
        limitProblem:
          "the listing's folders list \(entries) entries, more than \(limits.maxEntries), the most batchdl reads of one index; no more folders are fetched"
      )
    }
    var next: [PendingFolder] = []
    var problem: String?
    for folder in fetched where folder.level < depth {
      guard let listing = folder.listing, filter.enters(folder: folder.path) else { continue }
      for entry in listing.entries where entry.isFolder {
        let path = PathRules.join(folder.path, entry.name)
        guard !known.contains(path), filter.enters(folder: path) else { continue }
        if known.count >= limits.maxFolders {
          problem =
            "the index has more than \(limits.maxFolders) folders to fetch, the most batchdl fetches for one; the rest are left out"
          break
        }
        known.insert(path)
        next.append(PendingFolder(path: path, url: entry.url, level: folder.level + 1))
      }
      if problem != nil { break }
    }
    return CrawlStep(next: next, limitProblem: problem)
  }

  /// A file the fetched pages list that `filter` selects.
  public struct SelectedFile: Hashable, Sendable {
    /// Its path relative to the index URL (`sub folder/inner.txt`): where it goes under `to:`.
    public var path: String
    public var entry: Entry
  }

  /// The files of the fetched pages that `filter` selects, page by page in the order given, each
  /// page's in its order. The files of a folder that `filter` does not enter (or under one) are
  /// left out.
  public static func selectedFiles(_ fetched: [FetchedFolder], filter: Filter) -> [SelectedFile] {
    var files: [SelectedFile] = []
    for folder in fetched {
      guard let listing = folder.listing, entersAll(folder.path, filter: filter) else { continue }
      for entry in listing.entries where !entry.isFolder {
        let path = PathRules.join(folder.path, entry.name)
        if filter.selects(file: path) { files.append(SelectedFile(path: path, entry: entry)) }
      }
    }
    return files
  }

  /// Whether `filter` enters the folder at `path` and every folder above it.
  private static func entersAll(_ path: String, filter: Filter) -> Bool {
    if filter.exclude.isEmpty || path.isEmpty { return true }
    var prefix = ""
    for segment in path.split(separator: "/") {
      prefix = PathRules.join(prefix, String(segment))
      if !filter.enters(folder: prefix) { return false }
    }
    return true
  }
}
