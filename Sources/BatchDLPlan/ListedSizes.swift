import BatchDLManifest

/// A size a listing gives a file: to the byte (nginx's `autoindex_exact_size on`, JSON listings,
/// S3) or rounded (`1.2M`).
public struct ListedFileSize: Hashable, Sendable {
  public var bytes: Int64
  public var isExact: Bool

  public init(bytes: Int64, isExact: Bool) {
    self.bytes = bytes
    self.isExact = isExact
  }
}

/// What a task's size is expected to be before it is fetched: a size the manifest or a document
/// pins (`size:`, a list line's `size:N`, Metalink `<size>`: another size fails the task), else
/// the size a listing gives (an expectation only: the file is taken at whatever size it has).
public struct ExpectedSize: Hashable, Sendable {
  public var bytes: Int64
  /// Pinned: another size fails the task.
  public var isPinned: Bool
  /// To the byte (a pinned size always is; a listing's may be rounded).
  public var isExact: Bool
}

extension Plan {
  /// The size `task` is expected to have (`ExpectedSize`); nil when nothing says.
  public func expectedSize(of task: PlannedTask) -> ExpectedSize? {
    if let size = expectation(of: task)?.size { return ExpectedSize(bytes: size, isPinned: true, isExact: true) }
    guard let listed = listedSizes[task.request] else { return nil }
    return ExpectedSize(bytes: listed.bytes, isPinned: false, isExact: listed.isExact)
  }

  /// The size a request's body is expected to have, to the byte, for preallocation and the
  /// progress bar, when a listing gave it and nothing pins one (a pinned size is the transfer's
  /// `expectedSize`).
  public func listedSize(of request: PlannedRequest) -> Int64? {
    let owner = owner(of: request) ?? tasks(of: request).firstTask
    guard let size = expectedSize(of: owner), !size.isPinned, size.isExact else { return nil }
    return size.bytes
  }
}
