import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLManifest
@testable import BatchDLSupport

/// Rules between a task's keys and its session: background limits, upload sources, checksums.
@Suite struct TaskRuleTests {
  @Test func backgroundSessionRules() {
    expectProblems(
      """
      version: 1
      sessions:
        bg:
          kind: background
          identifier: org.example.bg
          tasks:
            - data: https://example.org/a.json
            - list: urls.txt
              kind: data
            - upload: https://example.org/up
              form: {file: "@a.bin"}
            - upload: https://example.org/up2
              body: hello
            - upload: https://example.org/up3
              from: a.bin
            - download: https://example.org/b.bin
      """,
      [
        Expected(
          "7:9", "data tasks are not supported in background sessions",
          "a background transfer must write to a file", "use 'download:' instead"),
        Expected("9:15", "data tasks are not supported in background sessions", "use 'kind: download'"),
        Expected("10:9", "background sessions upload files only ('from:')"),
        Expected("12:9", "background sessions upload files only ('from:')"),
      ])
  }

  @Test func dataTasksAreFineElsewhere() throws {
    for kind in ["default", "ephemeral"] {
      let manifest = try load(
        "version: 1\nsessions:\n  s:\n    kind: \(kind)\n    tasks:\n      - data: https://example.org/a.json\n")
      let spec = try #require(manifest.session("s")?.specs.first)
      #expect(spec.kind == .data)
      #expect(spec.method == "GET")
      #expect(spec.to == nil)
    }
  }

  @Test func uploadSources() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - upload: https://example.org/u1
            - upload: https://example.org/u2
              from: a.bin
              body: hello
            - upload: https://example.org/u3
              form: {a: b}
              body_file: b.json
            - upload: https://example.org/u4
              form: {file: "@"}
      """,
      [
        Expected("5:9", "an upload needs what to send", "'from:'", "'form:'", "'body:'", "'body_file:'"),
        Expected("6:9", "an upload sends one of 'from:', 'form:', 'body:' or 'body_file:', not several"),
        Expected("9:9", "an upload sends one of"),
        Expected("13:22", "form field 'file': '@' must be followed by a file path"),
      ])
  }

  @Test func uploadsDecode() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          tasks:
            - upload: https://example.org/put
              from: build/app.tar.gz
            - upload: https://example.org/form
              form: {channel: nightly, file: "@build/app.tar.gz"}
            - upload: https://example.org/post
              method: PATCH
              body: "{}"
      """)
    let specs = try #require(manifest.session("main")?.specs)
    #expect(specs.map(\.method) == ["PUT", "POST", "PATCH"])
    #expect(specs[0].from == "build/app.tar.gz")
    #expect(
      specs[1].form == [
        FormField(name: "channel", value: "nightly", file: nil),
        FormField(name: "file", value: "@build/app.tar.gz", file: "build/app.tar.gz"),
      ])
    #expect(specs[2].body == "{}")
  }

  @Test func downloadAndDataTaskRules() {
    let digest = String(repeating: "0", count: 64)
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/d.bin
              become_download: {larger_than: 1MB}
            - download: https://example.org/e.bin
              sha256: abc123
            - download: https://example.org/f.bin
              from: a.bin
            - data: https://example.org/g.json
              form: {a: b}
            - download: https://example.org/h.bin
              body: x
              body_file: y
            - upload: https://example.org/u
              from: a.bin
              sha256: \(digest)
            - data: https://example.org/i.json
              become_download: {}
            - download: https://example.org/j.bin
              sha256: \(String(repeating: "z", count: 64))
      """,
      [
        Expected("6:9", "become_download applies to data tasks only", "already a download"),
        Expected("8:17", "sha256 must be 64 hexadecimal digits", "found 6 characters"),
        Expected("10:15", "'from:' is an upload source", "a download task sends 'body:' or 'body_file:' instead"),
        Expected("12:15", "'form:' is an upload source", "a data task"),
        Expected("15:20", "give 'body:' or 'body_file:', not both"),
        Expected("18:17", "sha256 and size check a downloaded file", "an upload writes none"),
        Expected("20:26", "become_download needs 'content_type:' or 'larger_than:'"),
        Expected("22:17", "sha256 must be 64 hexadecimal digits", "'z'"),
      ])
  }

  @Test func severalKindsInOneTask() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.bin
              data: https://example.org/b.json
      """,
      [Expected("6:9", "a task has one kind", "'download:' is already given, so 'data:' cannot be")])
  }

  @Test func listKindAndKeys() throws {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - list: urls.txt
              kind: upload
            - list: more.txt
              kind: dowload
      """,
      [
        Expected("6:15", "a list expands to data or download tasks", "declare them one by one"),
        Expected(
          "8:15", "unknown kind 'dowload'", "expected one of data, download, upload", "did you mean 'download'?"),
      ])
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          tasks:
            - list: urls.txt
              kind: data
              to: files/
              method: HEAD
              priority: low
              after: [setup]
      """)
    guard case .list(let spec) = manifest.session("main")?.tasks.first else {
      Issue.record("expected a list entry")
      return
    }
    #expect(spec.file == "urls.txt")
    #expect(spec.kind == .data)
    #expect(spec.to == "files/")
    #expect(spec.method == "HEAD")
    #expect(spec.priority == .low)
    #expect(spec.after.map(\.id) == ["setup"])
  }

  @Test func taskDetailsDecode() throws {
    let manifest = try load(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.bin
              id: first
              method: POST
              body: q=1
              priority: high
              after: other
            - data: https://example.org/b.json
              body_file: query.json
              after: [first, second]
              become_download: {content_type: [application/pdf, application/zip], larger_than: 10MB}
      """)
    let specs = try #require(manifest.session("main")?.specs)
    #expect(specs[0].id == "first")
    #expect(specs[0].method == "POST")
    #expect(specs[0].after.map(\.id) == ["other"])
    #expect(specs[0].after.first?.mark.line == 10)
    #expect(specs[1].method == "POST")
    #expect(specs[1].bodyFile == "query.json")
    #expect(specs[1].after.map(\.id) == ["first", "second"])
    #expect(
      specs[1].becomeDownload
        == BecomeDownload(contentTypes: ["application/pdf", "application/zip"], largerThan: 10 << 20))
    #expect(specs[1].urlMark == SourceMark(file: "/virtual/manifest.yaml", line: 11, column: 15))
  }

  @Test func emptyID() {
    expectProblems(
      """
      version: 1
      sessions:
        main:
          tasks:
            - download: https://example.org/a.bin
              id: ""
      """,
      [Expected("6:13", "id must not be empty")])
  }
}
