import BatchDLSupport
import Foundation

/// What is known of an unfinished download: enough to ask for the rest and to check that the
/// server still has the same file.
public struct Checkpoint: Sendable, Equatable {
  /// The request key (hex).
  public var key: String
  /// The partial file, absolute (stored relative to the manifest's folder when it is inside it).
  public var partial: String
  /// The URL after redirects, credentials masked (informational).
  public var url: String
  /// A strong `ETag`, else nil.
  public var etag: String?
  public var lastModified: String?
  /// The full length the server announced, when it did.
  public var total: Int64?
  /// Bytes of the partial file known to be on disk (written and `fdatasync`ed); for a segmented
  /// download, those from byte 0 without a gap.
  public var durable: Int64
  /// A segmented download's extents on disk (the `extents` table); empty for one stream.
  public var extents: [ByteExtent]

  public init(
    key: String, partial: String, url: String, etag: String?, lastModified: String?, total: Int64?, durable: Int64,
    extents: [ByteExtent] = []
  ) {
    self.extents = extents
    self.key = key
    self.partial = partial
    self.url = url
    self.etag = etag
    self.lastModified = lastModified
    self.total = total
    self.durable = durable
  }

  /// The `If-Range` validator: the strong ETag, else `Last-Modified`.
  public var validator: String? { etag ?? lastModified }

  /// Whether it records bytes a run can go on from; false for the record a run writes of a partial
  /// file before its first byte (`StateRecorder.recordStarts`), which only says that batchdl
  /// made that file, so that prune may remove it once no task names it.
  public var holdsBytes: Bool { durable > 0 || !extents.isEmpty }
}

/// A task's last result, and what its file looked like when it was placed.
public struct StoredResult: Sendable, Equatable {
  public var taskID: String
  public var requestKey: String
  /// The destination, absolute, when the task has one.
  public var destination: String?
  public var outcome: String
  public var status: Int?
  public var size: Int64?
  public var sha256: String?
  public var etag: String?
  public var lastModified: String?
  /// The placed file's size and modification time (nanoseconds), to tell whether it changed since.
  public var fileSize: Int64?
  public var fileModified: Int64?
  public var errorCode: String?
  public var errorMessage: String?
  /// When the server was last asked for it (seconds since the epoch): a fetch, or a `304` to a
  /// conditional request. `refresh: DURATION` asks again once this is older.
  public var checked: Int64?

  public init(
    taskID: String, requestKey: String, destination: String?, outcome: String, status: Int? = nil, size: Int64? = nil,
    sha256: String? = nil, etag: String? = nil, lastModified: String? = nil, fileSize: Int64? = nil,
    fileModified: Int64? = nil, errorCode: String? = nil, errorMessage: String? = nil, checked: Int64? = nil
  ) {
    self.checked = checked
    self.taskID = taskID
    self.requestKey = requestKey
    self.destination = destination
    self.outcome = outcome
    self.status = status
    self.size = size
    self.sha256 = sha256
    self.etag = etag
    self.lastModified = lastModified
    self.fileSize = fileSize
    self.fileModified = fileModified
    self.errorCode = errorCode
    self.errorMessage = errorMessage
  }
}

/// Whose rows a `StateStore` reads and writes: several manifests can share one state folder.
public struct StateScope: Sendable, Equatable {
  /// The manifest's path relative to the state folder (`../mirror.yaml` for the default folder):
  /// it stays the same when the project folder, manifest and state together, is moved or copied.
  public var manifest: String
  /// The manifest's folder, absolute: partial files inside it are stored relative to it, so that a
  /// checkpoint still finds its file after the folder moved.
  public var directory: String

  public init(manifest: String, directory: String) {
    self.manifest = manifest
    self.directory = directory
  }

  /// `path` as stored: relative to `directory` when it is inside it.
  package func stored(_ path: String) -> String {
    let prefix = directory.hasSuffix("/") ? directory : directory + "/"
    return path.hasPrefix(prefix) && path.count > prefix.count ? String(path.dropFirst(prefix.count)) : path
  }

  /// A stored path made absolute again.
  package func absolute(_ path: String) -> String { FileAccess.resolve(path, against: directory) }
}
