import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLManifest

/// Only UTF-8 documents are read: libxml2 crashed switching to some declared encodings, and a
/// `<!DOCTYPE>` in UTF-16 passed the check on the bytes.
@Suite struct MetalinkEncodingTests {
  static let body = """
    <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a"><url>http://h/a</url></file></metalink>
    """

  @Test(arguments: ["UTF-32", "utf-32le", "UTF-32BE", "ISO-10646-UCS-4", "UTF-7", "UTF-16", "ISO-8859-1"])
  func aDeclaredEncodingOtherThanUTF8IsRefused(encoding: String) {
    let text = "<?xml version='1.0' encoding='\(encoding)'?>\n" + Self.body
    let document = Metalink.parse(Array(text.utf8), file: "doc.meta4")
    #expect(document.version == nil)
    #expect(
      rendered(document) == [
        "1:1: error: the document declares encoding '\(encoding)': batchdl reads Metalink documents in UTF-8 only"
      ])
  }

  @Test func utf8IsRead() {
    for declaration in ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", "<?xml version=\"1.0\"?>\n", ""] {
      #expect(Metalink.parse(Array((declaration + Self.body).utf8), file: "doc.meta4").files.count == 1)
    }
    #expect(Metalink.parse([0xEF, 0xBB, 0xBF] + Array(Self.body.utf8), file: "doc.meta4").files.count == 1)
  }

  @Test func utf16AndUTF32BytesAreRefused() {
    let doctype = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><!DOCTYPE m [<!ENTITY a \"aaaa\">]>" + Self.body
    let utf16: [UInt8] =
      [0xFF, 0xFE] + doctype.utf16.flatMap { unit -> [UInt8] in [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
    let utf32 = Array(Self.body.unicodeScalars).flatMap { scalar -> [UInt8] in
      let value = scalar.value
      return [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
    }
    for bytes in [utf16, utf32] {
      let document = Metalink.parse(bytes, file: "doc.meta4")
      #expect(document.version == nil)
      #expect(rendered(document).first?.contains("not UTF-8") == true, "\(rendered(document))")
    }
  }
}
