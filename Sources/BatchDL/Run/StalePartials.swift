import BatchDLSupport

/// Which partial file a checkpoint of the state folder names that prune removes: the decision of
/// `RunBookkeeper.removeStalePartials`, on paths compared as bytes.
package enum StalePartials {
  /// A partial file to remove, below one of the session's folders, and whether its checkpoint
  /// goes too.
  package struct Removal: Equatable, Sendable {
    /// The folder (the session's `dest` or its `partial_dir:`) below which no link is followed.
    package var root: String
    /// The partial file's path below `root`.
    package var relative: String
    /// Whether the checkpoint goes: its request is no longer planned. A checkpoint of a request
    /// the plan still makes is the run's to keep or replace.
    package var forget: Bool
  }

  /// What prune does with the partial file `partial` (absolute, normalized) that a checkpoint
  /// names, of a request that the plan makes with its partial file at `planned` (nil: the plan
  /// no longer makes it; `.some(nil)`: it makes it without a partial file), for a session whose
  /// `dest` and `partial_dir:` are `roots`: nil when the file stays (the plan writes that very
  /// file, or it lies outside the session's folders, perhaps another session's).
  package static func decide(partial: String, planned: String??, roots: [String]) -> Removal? {
    if let kept = planned, let path = kept, path.utf8.elementsEqual(partial.utf8) { return nil }
    // Only batchdl's own partial files, whatever a damaged or edited record names.
    let suffix = PartialFile.suffix.utf8
    guard partial.utf8.count > suffix.count, partial.utf8.suffix(suffix.count).elementsEqual(suffix) else {
      return nil
    }
    for top in roots {
      let prefix = Array((top == "/" ? "/" : top + "/").utf8)
      let bytes = Array(partial.utf8)
      guard bytes.count > prefix.count, bytes.starts(with: prefix) else { continue }
      let relative = String(decoding: bytes[prefix.count...], as: UTF8.self)
      return Removal(root: top, relative: relative, forget: planned == nil)
    }
    return nil
  }
}
