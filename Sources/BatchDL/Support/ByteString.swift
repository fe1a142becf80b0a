/// A string compared and hashed by its UTF-8 bytes, for file names. Swift's `String` compares by
/// canonical equivalence: "é" written as U+00E9 and as "e" followed by U+0301 are one string, but
/// two different files on Linux, whose file names are bytes.
struct ByteString: Hashable, Sendable {
  var text: String

  init(_ text: String) { self.text = text }

  static func == (lhs: ByteString, rhs: ByteString) -> Bool {
    lhs.text.utf8.elementsEqual(rhs.text.utf8)
  }

  func hash(into hasher: inout Hasher) {
    var text = text
    text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
  }
}
