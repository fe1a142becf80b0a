/// A string compared and hashed by its UTF-8 bytes, for file names. Swift's `String` compares by
/// canonical equivalence: "é" written as U+00E9 and as "e" followed by U+0301 are one string, but
/// two different files on Linux, whose file names are bytes.
package struct ByteString: Hashable, Sendable {
  package var text: String

  package init(_ text: String) { self.text = text }

  package static func == (lhs: ByteString, rhs: ByteString) -> Bool {
    lhs.text.utf8.elementsEqual(rhs.text.utf8)
  }

  package func hash(into hasher: inout Hasher) {
    var text = text
    text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
  }
}
