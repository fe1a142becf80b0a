import BatchDLSupport

/// Redirects that batchdl follows itself: when a request carries headers that must stay with
/// their origin (credentials, tokens, `${VAR}` values), libcurl would send every custom header to
/// wherever a redirect points. The engine then follows each hop with the next request made here.
extension TransferSpec {
  /// Whether batchdl, not libcurl, follows this request's redirects.
  package var followsRedirectsItself: Bool { !originOnlyHeaders.isEmpty || access.carriesCredentials }

  /// The header lines this request sends to its URL: all of them at the origin they were given
  /// for, and none of `originOnlyHeaders` anywhere else. The one rule for every path: a first
  /// request, a resume, a retry, a segment, a mirror, a repair, a source a document names.
  package var headersForURL: [String] {
    let given = headersForOrigin
    guard !sourceHeaders.isEmpty else { return given }
    // The source's own headers (a mirror's `headers:`) replace the ones of the same name.
    let names = Set(sourceHeaders.map(Self.headerName))
    return given.filter { !names.contains(Self.headerName($0)) } + sourceHeaders
  }

  /// The session's and the task's headers this URL gets: all at their origin, else without
  /// `originOnlyHeaders`.
  private var headersForOrigin: [String] {
    guard !originOnlyHeaders.isEmpty, let origin = headerOrigin, !origin.owns(url) else { return headers }
    return headers.filter { !originOnlyHeaders.contains(Self.headerName($0)) }
  }

  /// The lower-cased name of a header line.
  package static func headerName(_ line: String) -> String {
    (line.split(separator: ":", maxSplits: 1).first.map { $0.lowercased() } ?? "").trimmingSpaces
  }

  /// The request for the next hop of a redirect with `status` to `location` (absolute, as libcurl
  /// resolved it): headers that must stay with their origin are dropped when the hop leaves it
  /// (scheme, host or port), a `303` (and a `301` or `302` to a `POST`) becomes a `GET` without a
  /// body, and only http and https are followed.
  package func following(_ location: String, status: Int) -> Result<TransferSpec, TransferFailure> {
    let normalizer = URLNormalizer()
    let next: NormalizedURL
    switch normalizer.normalize(location) {
    case .success(let url): next = url
    case .failure(let problem):
      return .failure(
        TransferFailure(code: .protocol, message: "the server redirected to a URL that is refused: \(problem)"))
    }
    var spec = self
    // The credentials stay with the origin of the URL they were given for.
    if spec.headerOrigin == nil, access.carriesCredentials { spec.headerOrigin = Origin(url: url) ?? .nowhere }
    spec.url = location
    let current = try? normalizer.normalize(url).get()
    if current?.scheme != next.scheme || current?.authority != next.authority {
      spec.headers.removeAll { originOnlyHeaders.contains(Self.headerName($0)) }
      spec.sourceHeaders.removeAll { originOnlyHeaders.contains(Self.headerName($0)) }
    } else if let userInfo = Redactor.userInfo(of: url), Redactor.userInfo(of: location) == nil,
      let schemeEnd = location.range(of: "://")
    {
      // libcurl sends URL credentials to the same origin again; so does batchdl.
      spec.url = String(location[..<schemeEnd.upperBound]) + userInfo + "@" + location[schemeEnd.upperBound...]
    }
    if status == 303 && !method(is: "HEAD") || (status == 301 || status == 302) && method(is: "POST") {
      spec.method = "GET"
      spec.body = .none
    }
    return .success(spec)
  }
}
