/// Bytes `start..<end` of a file.
public struct ByteExtent: Sendable, Equatable {
  public var start: Int64
  public var end: Int64

  public init(start: Int64, end: Int64) {
    self.start = start
    self.end = end
  }

  public var length: Int64 { end - start }

  /// `extents` sorted, without empty ones, and with touching or overlapping ones joined.
  public static func merged(_ extents: [ByteExtent]) -> [ByteExtent] {
    var result: [ByteExtent] = []
    for extent in extents.sorted(by: { $0.start < $1.start }) where extent.end > extent.start {
      if let last = result.last, extent.start <= last.end {
        result[result.count - 1].end = max(last.end, extent.end)
      } else {
        result.append(extent)
      }
    }
    return result
  }

  /// The parts of `whole` that none of `extents` covers, in order.
  public static func gaps(in whole: ByteExtent, besides extents: [ByteExtent]) -> [ByteExtent] {
    var gaps: [ByteExtent] = []
    var position = whole.start
    for extent in merged(extents) where extent.end > position {
      if extent.start > position { gaps.append(ByteExtent(start: position, end: min(extent.start, whole.end))) }
      position = max(position, extent.end)
      if position >= whole.end { break }
    }
    if position < whole.end { gaps.append(ByteExtent(start: position, end: whole.end)) }
    return gaps.filter { $0.end > $0.start }
  }
}
