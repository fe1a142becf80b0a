import BatchDL
import BatchDLTransfer
import Foundation
import TestServer
import TestSupport
import Testing

/// `report html`: the page's content, its escaping and size, and the page as Debian's `chromium`
/// shows it (which scripts/setup installs): no console message at all (no script error, nothing
/// blocked), the table drawn and sorted by its own script, a screenshot saved.
@Suite struct ReportPageTests {
  /// A report of `count` made-up tasks: every 25th fails, every 40th is deferred; with `timings`,
  /// tasks start 0.05 s apart and take 0.2 s to 1 s.
  static func synthetic(count: Int, timings: Bool) -> RunReport {
    var report = RunReport(manifest: "mirror.yaml")
    report.requests = count
    for index in 0..<count {
      let name = "pool/main/\(index % 37)/package-\(index).tar.gz"
      var result = TaskResult(
        id: "mirror/" + name, session: ["nightly", "assets"][index % 2], kind: .download,
        url: "https://downloads.example.org/releases/" + name, to: "mirror/" + name, outcome: .completed, status: 200,
        size: Int64(1000 + (index * 7919) % 5_000_000), sha256: String(repeating: "0123456789abcdef", count: 4),
        attempts: 1, source: "network")
      if index % 25 == 3 {
        result.outcome = .failed
        result.size = nil
        result.sha256 = nil
        result.status = 404
        result.error = ("http-404", "HTTP 404 Not Found")
      } else if index % 40 == 5 {
        result.outcome = .deferred
        result.error = ("policy", "metered network")
      }
      result.transferred = result.size ?? 0
      if timings {
        result.started = Double(index) * 0.05
        result.seconds = Double(index) * 0.05 + 0.2 + Double(index % 9) * 0.1
      }
      report.results.append(result)
    }
    if timings { report.seconds = Double(count) * 0.05 + 1.5 }
    return report
  }

  /// The task rows the page's script draws its table from, parsed as the script parses them.
  static func rows(_ html: String) throws -> [[Any]] {
    let start = try #require(html.range(of: "<script type=\"application/json\" id=\"data\">"))
    let end = try #require(html.range(of: "</script>", range: start.upperBound..<html.endIndex))
    let json = String(html[start.upperBound..<end.lowerBound])
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    return try #require(object["rows"] as? [[Any]])
  }

  /// Whether each of `texts` appears in the table's body (after the page's `<tbody>`), in this order.
  static func inOrder(_ texts: [String], in dom: String) -> Bool {
    guard let body = dom.range(of: "<tbody>") else { return false }
    var position = body.upperBound
    for text in texts {
      guard let found = dom.range(of: text, range: position..<dom.endIndex) else { return false }
      position = found.upperBound
    }
    return true
  }

  /// Where screenshots go: the test's folder, and `$BATCHDL_SCREENSHOTS` too when it is set.
  static func keep(_ screenshot: String, as name: String) {
    guard let folder = ProcessInfo.processInfo.environment["BATCHDL_SCREENSHOTS"] else { return }
    try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    try? FileManager.default.removeItem(atPath: folder + "/" + name)
    try? FileManager.default.copyItem(atPath: screenshot, toPath: folder + "/" + name)
  }

  /// Whether `path` is a PNG image of some substance.
  static func isScreenshot(_ path: String) -> Bool {
    guard let data = FileManager.default.contents(atPath: path) else { return false }
    return data.count > 10_000 && data.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
  }

  static var chromium: Bool {
    if HeadlessChromium.path != nil { return true }
    print("skipped: chromium is not installed (scripts/setup installs it); the page was not rendered")
    return false
  }

  @Test func failuresComeFirstAfterTheSummary() throws {
    var report = RunReport(manifest: "nightly.yaml")
    report.requests = 5
    report.shard = "1/3"
    report.results = [
      TaskResult(
        id: "out/a.bin", session: "main", kind: .download, url: "http://h/a.bin", to: "out/a.bin",
        outcome: .completed, status: 200, size: 10, sha256: String(repeating: "a", count: 64), attempts: 1,
        source: "network"),
      TaskResult(
        id: "out/b.bin", session: "main", kind: .download, url: "http://h/b.bin", to: "out/b.bin", outcome: .failed,
        status: 404, attempts: 1, error: ("http-404", "HTTP 404 Not Found")),
      TaskResult(
        id: "out/c.bin", session: "main", kind: .download, url: "http://h/c.bin", to: "out/c.bin",
        outcome: .deferred, error: ("policy", "metered network")),
      TaskResult(
        id: "out/d.iso", session: "isos", kind: .download, url: "http://h/d.iso", to: "out/d.iso", outcome: .failed,
        attempts: 4, error: ("all-sources-failed", "every source failed")),
      TaskResult(
        id: "api/e", session: "main", kind: .data, url: "http://h/e", to: nil, outcome: .cancelled, attempts: 1),
    ]
    report.results[3].sourceErrors = [
      SourceFailure(url: "http://m1/d.iso", code: .http(503), message: "HTTP 503 Service Unavailable")
    ]
    let html = ReportPage(report: report).html
    let failures = try #require(html.range(of: "<section id=\"failures\">"))
    let timeline = try #require(html.range(of: "<section id=\"timeline\">"))
    let tasks = try #require(html.range(of: "<section id=\"tasks\">"))
    #expect(failures.lowerBound < timeline.lowerBound && timeline.lowerBound < tasks.lowerBound)
    #expect(html.contains("<h1>batchdl report <span class=\"manifest\">nightly.yaml</span></h1>"))
    #expect(html.contains("5 tasks · 5 requests · shard 1/3"))
    #expect(html.contains("<div class=\"count failed\"><dt>failed</dt><dd>2</dd></div>"))
    #expect(html.contains("<div class=\"count completed\"><dt>completed</dt><dd>1</dd></div>"))
    #expect(html.contains("<div class=\"count cancelled\"><dt>cancelled</dt><dd>1</dd></div>"))
    let section = String(html[failures.lowerBound..<timeline.lowerBound])
    #expect(section.contains("<h2>Failures (2)</h2>"))
    #expect(section.contains("<code class=\"code\">http-404</code>"))
    #expect(section.contains("HTTP 404 Not Found"))
    #expect(section.contains("out/d.iso"))
    #expect(section.contains("<code>http-503</code> <span class=\"url\">http://m1/d.iso</span>"))
    #expect(!section.contains("out/c.bin"), "a deferred task is not a failure")
    #expect(html.contains("The chart needs a report of <code>batchdl run --timings</code>"))
    let rows = try Self.rows(html)
    #expect(rows.compactMap { $0.first as? String } == ["out/b.bin", "out/d.iso", "api/e", "out/c.bin", "out/a.bin"])
    #expect(!html.contains("<th data-column=\"started\""), "no time columns without times")
  }

  /// Task ids, URLs, sessions and server messages are the manifest's and the servers' words: the
  /// page shows them as text, and nothing in them becomes markup, a script or a load.
  @Test func hostileStringsStayText() throws {
    let id = "out/<script>document.title='pwned'</script>"
    let url = "http://h/?a=1&b=\"><img src=x onerror=\"document.title='pwned'\">"
    let message = "</script><script>document.title='pwned'</script><!-- & 'quoted' \"double\""
    var report = RunReport(manifest: "m<i>.yaml")
    report.requests = 2
    report.results = [
      TaskResult(
        id: id, session: "<b>s</b>", kind: .download, url: url, to: "out/</script>", outcome: .failed, status: 500,
        attempts: 1, error: ("http-500", message)),
      TaskResult(
        id: "out/&amp;", session: "main", kind: .download, url: "http://h/x", to: "out/&amp;", outcome: .completed,
        status: 200, size: 1, sha256: "\"><script>document.title='pwned'</script>", attempts: 1),
    ]
    let html = ReportPage(report: report).html
    #expect(html.components(separatedBy: "<script").count - 1 == 2, "the page's own two script elements")
    #expect(html.components(separatedBy: "</script").count - 1 == 2)
    #expect(!html.contains("<img"))
    #expect(!html.contains("<b>"))
    #expect(!html.contains("<i>"))
    #expect(!html.contains("<!--"))
    #expect(html.contains("out/&lt;script&gt;document.title=&apos;pwned&apos;&lt;/script&gt;"))
    #expect(html.contains("<title>batchdl report: m&lt;i&gt;.yaml</title>"))
    let rows = try Self.rows(html)
    let row = try #require(rows.first { $0.first as? String == id })
    #expect(row[10] as? String == url)
    #expect(row[11] as? String == "out/</script>")
    #expect(row[13] as? String == message)
    #expect(rows.contains { $0.first as? String == "out/&amp;" })

    guard Self.chromium else { return }
    let folder = TemporaryDirectory()
    let file = folder.write("hostile.html", html)
    let page = try HeadlessChromium.load(file)
    #expect(page.console.isEmpty, "\(page.console)")
    #expect(page.dom.contains("<title>batchdl report: m&lt;i&gt;.yaml</title>"), "no script of the report ran")
    #expect(!page.dom.contains("pwned</title>"))
    #expect(!page.dom.contains("<img"))
    #expect(!page.dom.contains("<b>"))
    #expect(Self.inOrder(["out/&lt;script&gt;document.title='pwned'&lt;/script&gt;", "out/&amp;amp;"], in: page.dom))
    #expect(page.dom.contains("http://h/?a=1&amp;b=\"&gt;&lt;img src=x onerror=\"document.title='pwned'\"&gt;"))
  }

  /// The check of the console catches a script that throws and one that the page's policy blocks.
  @Test func theConsoleCheckCatchesScriptErrors() throws {
    guard Self.chromium else { return }
    let html = ReportPage(report: Self.synthetic(count: 3, timings: false)).html
    let policy = try #require(
      html.range(of: "<meta http-equiv=\"Content-Security-Policy\"[^>]*>\n", options: .regularExpression))
    let folder = TemporaryDirectory()
    let throwing = folder.write(
      "throwing.html",
      html.replacingCharacters(in: policy, with: "").replacingOccurrences(
        of: "</body>", with: "<script>null.x;</script></body>"))
    let thrown = try HeadlessChromium.load(throwing)
    #expect(thrown.console.contains { $0.contains("Uncaught TypeError") }, "\(thrown.console)")
    let injected = folder.write(
      "injected.html",
      html.replacingOccurrences(of: "</body>", with: "<script>document.title = 'pwned';</script></body>"))
    let blocked = try HeadlessChromium.load(injected)
    #expect(blocked.console.contains { $0.contains("Content Security Policy") }, "\(blocked.console)")
    #expect(!blocked.dom.contains("<title>pwned</title>"))
  }

  /// The page with its script left out, as a browser with JavaScript off shows it.
  @Test func theSummaryFailuresAndChartsReadWithoutTheScript() throws {
    guard Self.chromium else { return }
    let html = ReportPage(report: Self.synthetic(count: 30, timings: true)).html
    let script = try #require(html.range(of: "<script>[\\s\\S]*?</script>", options: .regularExpression))
    let folder = TemporaryDirectory()
    let file = folder.write("page.html", html.replacingCharacters(in: script, with: ""))
    let screenshot = folder.path + "/no-script.png"
    let page = try HeadlessChromium.load(file, screenshot: screenshot)
    #expect(page.console.isEmpty, "\(page.console)")
    #expect(page.dom.contains("<h2>Failures (2)</h2>"))
    #expect(page.dom.contains("mirror/pool/main/3/package-3.tar.gz"))
    #expect(page.dom.contains("Transfers in flight"))
    #expect(page.dom.contains("<html lang=\"en\" class=\"nojs\">"))
    // The first page of the table is in the page itself, failures first: CI servers often serve
    // archived HTML with scripts blocked.
    let body = try #require(page.dom.range(of: "<tbody>[\\s\\S]*?</tbody>", options: .regularExpression))
    let rows = page.dom[body].components(separatedBy: "<tr class=\"").dropFirst().map { $0.prefix { $0 != "\"" } }
    #expect(rows.count == 30, "\(rows.count)")
    #expect(rows.prefix(2) == ["failed", "failed"], "\(rows)")
    #expect(page.dom.contains("Without JavaScript, the table shows the first 30 of the 30 tasks"))
    #expect(Self.isScreenshot(screenshot))
    Self.keep(screenshot, as: "report-no-script.png")
  }

  @Test func pageLoadsNothingFromElsewhere() throws {
    let html = ReportPage(report: Self.synthetic(count: 50, timings: true)).html
    for needle in [" src=", " href=", "<link", "@import", "url(", "<iframe", "<object", "<embed"] {
      #expect(!html.contains(needle), "\(needle)")
    }
    #expect(
      html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'sha256-"))
  }

  /// URL user-info is masked in the page even when a report has it (a run's report never does).
  @Test func userInfoIsMasked() throws {
    var report = RunReport(manifest: "m.yaml")
    report.results = [
      TaskResult(
        id: "out/a", session: "main", kind: .download, url: "https://user:hunter22@h.example/a", to: "out/a",
        outcome: .failed, error: ("connect", "cannot reach https://user:hunter22@h.example/a"))
    ]
    let html = ReportPage(report: report).html
    #expect(!html.contains("hunter22"))
    #expect(html.contains("https://&lt;redacted&gt;@h.example/a"))
  }

  /// 10,000 tasks: a page of a few MB whose table draws one page of rows, sorted by a click.
  @Test func tenThousandTasksStaySmallAndSortInTheBrowser() throws {
    let report = Self.synthetic(count: 10_000, timings: true)
    let html = ReportPage(report: report).html
    let size = html.utf8.count
    print("report html: 10,000 tasks make a page of \(size) bytes")
    #expect(size < 4_000_000)
    #expect(try Self.rows(html).count == 10_000)
    #expect(html.contains("<h2>Failures (400)</h2>"))
    #expect(html.contains("200 more are in the table below."))
    guard Self.chromium else { return }
    let folder = TemporaryDirectory()
    let file = folder.write("page.html", html)
    let screenshot = folder.path + "/report-10000.png"
    let page = try HeadlessChromium.load(file, fragment: "sort=-size", screenshot: screenshot)
    #expect(page.console.isEmpty, "\(page.console)")
    #expect(page.dom.contains("1–250 of 10000"))
    #expect(page.dom.components(separatedBy: "<tr class=").count - 1 == 250, "one page of rows")
    #expect(page.dom.contains("<th data-column=\"size\" class=\"num\" aria-sort=\"descending\">"))
    // The largest sizes: 1000 + (index × 7919) mod 5,000,000 is largest for the index nearest below
    // a multiple of 5,000,000 / 7919.
    let sizes = report.results.compactMap { result in result.size.map { (result.id, $0) } }
    let largest = sizes.sorted { $0.1 > $1.1 }.prefix(3).map { ">\($0.0)<" }
    #expect(Self.inOrder(largest, in: page.dom), "\(largest)")
    #expect(Self.isScreenshot(screenshot))
    Self.keep(screenshot, as: "report-10000.png")
    let last = try HeadlessChromium.load(file, fragment: "sort=-size&page=40")
    #expect(last.console.isEmpty, "\(last.console)")
    #expect(last.dom.contains("9751–10000 of 10000"))
    // Tasks without a size (the failed ones) come last either way.
    #expect(last.dom.components(separatedBy: "<tr class=\"failed\">").count - 1 == 250, "the 400 failures end it")
  }

  /// A real run with `--timings` against the loopback server (some tasks fail), its page, and the
  /// page in Chromium: failures first, the charts, a sort by size both ways.
  @Test func aTimedRunsPageRendersAndSorts() throws {
    let fixture = try RunFixture()
    var tasks = ""
    for index in 0..<6 {
      let body = TestData.pseudoRandomBytes(count: (index + 1) * 40_000, seed: UInt64(index + 1))
      fixture.server.route(
        "/files/f\(index).bin",
        .file(
          FileResource(body: body, etag: .strong("f\(index)"), trickle: Trickle(chunkBytes: 16 << 10, interval: 0.02))))
      tasks += "      - download: BASE/files/f\(index).bin\n"
    }
    for index in 0..<3 { tasks += "      - download: BASE/missing/m\(index).bin\n" }
    let base = fixture.server.baseURL.replacingOccurrences(of: "http://", with: "http://user:s3cr3tpass@")
    tasks += "      - download: \(base)/missing/with-password.bin\n"
    fixture.manifest(
      """
      version: 1
      \(RunTests.fast)
      sessions:
        main:
          dest: out/
          network: {max_connections_per_host: 3}
          tasks:
      \(tasks)
      """)
    let run = try fixture.run(["--timings"])
    #expect(run.status == 1, "\(run.stdout)\(run.stderr)")
    let results = try fixture.tasks()
    #expect(results.count == 10)
    for (id, task) in results {
      let started = try #require(Double(task["started"] as? String ?? ""), "\(id) has no start")
      let seconds = try #require(Double(task["seconds"] as? String ?? ""), "\(id) has no end")
      #expect(started <= seconds, "\(id)")
    }
    let merged = try BinaryRunner.run(["report", "merge", "report.json", "-o", "merged.json"], in: fixture.folder.path)
    #expect(merged.status == 0, "\(merged.stderr)")
    #expect(fixture.folder.read("merged.json")?.contains("\"started\":") == true, "merge keeps the times")
    #expect(fixture.folder.read("merged.json")?.contains("\"protocol\":\"HTTP/1.1\"") == true, "and the protocols")

    let result = try BinaryRunner.run(["report", "html", "report.json", "-o", "report.html"], in: fixture.folder.path)
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.hasPrefix("wrote report.html (10 tasks, "))
    let html = try #require(fixture.folder.read("report.html"))
    #expect(!html.contains("s3cr3tpass"))
    #expect(html.contains("<h2>Failures (4)</h2>"))
    #expect(html.contains("10 transfers, at most "))
    #expect(html.contains("<th data-column=\"started\" class=\"num\"><button type=\"button\">start s</button></th>"))

    guard Self.chromium else { return }
    let file = fixture.folder.path + "/report.html"
    let screenshot = fixture.folder.path + "/report-run.png"
    let page = try HeadlessChromium.load(file, screenshot: screenshot)
    #expect(page.console.isEmpty, "\(page.console)")
    #expect(Self.isScreenshot(screenshot))
    Self.keep(screenshot, as: "report-run.png")
    #expect(page.dom.contains("1–10 of 10"))
    #expect(page.dom.contains("Transfers in flight"))
    #expect(
      Self.inOrder(
        [">out/m0.bin<", ">out/m1.bin<", ">out/m2.bin<", ">out/with-password.bin<", ">out/f0.bin<"], in: page.dom))
    let largestFirst = (0..<6).reversed().map { ">out/f\($0).bin<" }
    let descending = try HeadlessChromium.load(file, fragment: "sort=-size")
    #expect(descending.console.isEmpty, "\(descending.console)")
    #expect(Self.inOrder(largestFirst, in: descending.dom), "largest first")
    let ascending = try HeadlessChromium.load(file, fragment: "sort=size&outcome=completed")
    #expect(ascending.console.isEmpty, "\(ascending.console)")
    #expect(Self.inOrder(largestFirst.reversed(), in: ascending.dom), "smallest first")
    #expect(ascending.dom.contains("1–6 of 6 (10 in all)"))
    #expect(!Self.inOrder([">out/m0.bin<"], in: ascending.dom), "the outcome choice leaves the failures out")
  }

  @Test func unreadableReportsAreRefused() throws {
    let folder = TemporaryDirectory()
    folder.write("bad.json", "{\"format\": \"something-else\"}")
    let result = try BinaryRunner.run(["report", "html", "bad.json", "-o", "out.html"], in: folder.path)
    #expect(result.status == 2)
    #expect(result.stderr.contains("not a batchdl report"))
    #expect(!folder.exists("out.html"))
  }

  @Test func reportsWithNumbersNoRunMakesAreRefusedNotLoopedOn() throws {
    // A huge `seconds` made `report html` loop for ever; sizes near Int64.max trapped `diff`.
    let folder = TemporaryDirectory()
    let task =
      #"{"id":"a","session":"s","kind":"download","url":"http://h/a","outcome":"completed","attempts":1,"resumed_from":0"#
    let cases = [
      #"{"format":"batchdl-report/1","manifest":"m.yaml","seconds":"1e300","summary":{},"tasks":[]}"#,
      #"{"format":"batchdl-report/1","manifest":"m.yaml","summary":{},"tasks":[\#(task),"size":9223372036854775807}]}"#,
      #"{"format":"batchdl-report/1","manifest":"m.yaml","summary":{},"tasks":[\#(task),"size":10,"seconds":"99999999999"}]}"#,
    ]
    for (index, text) in cases.enumerated() {
      folder.write("r\(index).json", text)
      let html = try BinaryRunner.run(
        ["report", "html", "r\(index).json", "-o", "out.html"], in: folder.path, timeout: 20)
      #expect(html.status == 2 && !html.timedOut, "case \(index): \(html.stderr)")
      #expect(html.stderr.contains("out of range"), "case \(index): \(html.stderr)")
      let diff = try BinaryRunner.run(
        ["report", "diff", "r\(index).json", "r\(index).json"], in: folder.path, timeout: 20)
      #expect(diff.status == 2, "case \(index): \(diff.stderr)")
    }
    #expect(!folder.exists("out.html"))
  }
}
