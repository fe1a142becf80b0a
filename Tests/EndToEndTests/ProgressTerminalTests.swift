import Foundation
import TestServer
import TestSupport
import Testing

/// A pane of a tmux server of its own (its own socket), running bash with a known prompt: a real
/// terminal whose screen, scrollback and modes the tests read back.
final class TerminalPane {
  static let tmux = ["/usr/bin/tmux", "/usr/local/bin/tmux", "/bin/tmux"].first {
    FileManager.default.isExecutableFile(atPath: $0)
  }
  static let prompt = "PROMPT$ "

  let socket = "batchdl-progress-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
  private var started = false
  /// The server's socket, removed at the end (tmux leaves it).
  private var socketPath = ""
  private let outputs = TemporaryDirectory()

  /// Starts the server with one detached session of `columns` by `rows` in `folder`.
  init(folder: String, columns: Int = 120, rows: Int = 40) throws {
    _ = try command([
      "-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "\(columns)", "-y", "\(rows)", "-c", folder,
      "/usr/bin/env", "PS1=\(Self.prompt)", "/bin/bash", "--norc", "--noprofile",
    ])
    started = true
    socketPath = format("#{socket_path}")
    // The prompt shows once bash reads its input (at most 10 s).
    for _ in 0..<100 where !screen().contains(where: { $0.hasPrefix(Self.prompt) }) { usleep(100_000) }
  }

  deinit {
    guard started else { return }
    _ = try? command(["kill-server"])
    if !socketPath.isEmpty { unlink(socketPath) }
  }

  /// Runs `tmux -L socket arguments...` and returns what it printed. Started with `posix_spawn`,
  /// every signal unblocked and at its default, and its output in a file: the server that the
  /// first command forks keeps all it inherits, and needs its signals.
  @discardableResult
  func command(_ arguments: [String]) throws -> String {
    let path = outputs.path + "/output"
    var environment = ProcessInfo.processInfo.environment
    environment["TMUX"] = nil
    environment["LC_ALL"] = "C.UTF-8"
    let pid = try CleanSpawn.start(
      Self.tmux ?? "tmux", ["-L", socket] + arguments, stdout: path, environment: environment)
    _ = CleanSpawn.wait(pid)
    return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
  }

  /// The screen's rows (without trailing spaces); `joined` joins rows that a long line wrapped onto.
  func screen(joined: Bool = false) -> [String] {
    let text = (try? command(["capture-pane", "-p", "-t", "main"] + (joined ? ["-J"] : []))) ?? ""
    return lines(text)
  }

  /// The scrollback and the screen, row by row.
  func everything() -> [String] {
    lines((try? command(["capture-pane", "-p", "-S", "-", "-t", "main"])) ?? "")
  }

  /// The screen with its attributes as escape sequences (`capture-pane -e`).
  func screenWithAttributes() -> String {
    (try? command(["capture-pane", "-p", "-e", "-t", "main"])) ?? ""
  }

  /// A format of the pane, e.g. `#{cursor_flag}`.
  func format(_ format: String) -> String {
    ((try? command(["display-message", "-p", "-t", "main", format])) ?? "")
      .trimmingCharacters(in: .whitespacesAndNewlines)
  }

  /// Types `text` and presses Enter.
  func type(_ text: String) throws {
    try command(["send-keys", "-t", "main", "-l", text])
    try command(["send-keys", "-t", "main", "Enter"])
  }

  private func lines(_ text: String) -> [String] {
    var rows = text.components(separatedBy: "\n").map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
    while rows.last?.isEmpty == true { rows.removeLast() }
    return rows
  }
}

/// The live progress bars on a real terminal (tmux): 16 throttled transfers at once, their bars
/// redrawn in place, cut to the width, the scrollback untouched, and the terminal as it was after
/// the run and after Ctrl-C. Captures are polled a bounded number of times.
@Suite(.serialized) struct ProgressTerminalTests {
  /// The names of the 16 downloads: long and wide ones sort first, so they get a bar.
  static let names: [String] =
    ["a-" + String(repeating: "very-long-directory-name-", count: 6) + "file.bin", "b-数据文件-日本語-ファイル.bin"]
    + (3...16).map { "file-\($0 < 10 ? "0" : "")\($0).bin" }

  /// A bar line: the bar, the percentage, the bytes and the task's id (cut at its start when long).
  static var barLine: Regex<Substring> { #/^  \[[= ]{24}\] +\d{1,3}% [0-9.]+ [KMG]?B +(?:…|out/).*$/# }
  static var totalLine: Regex<Substring> { #/^\[[= ]{24}\] \d+\/16 tasks  .*B\/s.*$/# }
  static var moreLine: Regex<Substring> { #/^  … and \d+ more$/# }

  /// A fixture serving each name's `size` bytes at `rate` bytes a second per response, the
  /// manifest downloading all of them at once into `out/`, and `run.sh` running it with bars.
  func fixture(size: Int, rate: Int) throws -> RunFixture {
    let fixture = try RunFixture()
    var tasks = ""
    for (index, name) in Self.names.enumerated() {
      fixture.server.route(
        "/f\(index)", .file(FileResource(body: [UInt8](repeating: UInt8(index), count: size), rateLimit: rate)))
      tasks += "      - download: BASE/f\(index)\n        to: \(name)\n"
    }
    fixture.manifest(
      """
      version: 1
      sessions:
        bars:
          kind: default
          dest: out/
          network: {max_connections_per_host: 16, max_concurrent: 16}
          tasks:

      """ + tasks)
    fixture.folder.write(
      "run.sh", "exec '\(BinaryRunner.executable)' run manifest.yaml --progress always --report report.json\n")
    return fixture
  }

  /// Polls the screen (at most `tries` times, 100 ms apart) until `accept` takes it.
  func poll(_ pane: TerminalPane, tries: Int, _ accept: ([String]) -> Bool) -> [String]? {
    for _ in 0..<tries {
      let screen = pane.screen()
      if accept(screen) { return screen }
      usleep(100_000)
    }
    return nil
  }

  /// The bar lines of a screen, by row.
  func bars(_ screen: [String]) -> [Int: String] {
    var rows: [Int: String] = [:]
    for (row, line) in screen.enumerated() where line.wholeMatch(of: Self.barLine) != nil { rows[row] = line }
    return rows
  }

  /// Checks a screen drawn while all 16 transfers run: the command, then bars, the count of the
  /// others and the total, each line whole and within `columns`, nothing else.
  func checkLive(_ screen: [String], columns: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    let body = screen.filter { !$0.hasPrefix(TerminalPane.prompt) }
    let shown = bars(screen).count
    #expect(shown == 8, "\(screen)", sourceLocation: sourceLocation)
    #expect(body.filter { $0.wholeMatch(of: Self.moreLine) != nil }.count == 1, sourceLocation: sourceLocation)
    #expect(body.filter { $0.wholeMatch(of: Self.totalLine) != nil }.count == 1, sourceLocation: sourceLocation)
    // At most one line per transfer in flight, plus the count of the others and the total.
    #expect(body.count == shown + 2, "\(screen)", sourceLocation: sourceLocation)
    for line in body {
      #expect(
        line.wholeMatch(of: Self.barLine) != nil || line.wholeMatch(of: Self.moreLine) != nil
          || line.wholeMatch(of: Self.totalLine) != nil, "garbled: \(line)", sourceLocation: sourceLocation)
      #expect(cells(line) < columns, "too wide: \(line)", sourceLocation: sourceLocation)
    }
  }

  /// The cells a line takes (the test's names hold CJK characters, two cells each).
  func cells(_ line: String) -> Int {
    line.unicodeScalars.reduce(0) { $0 + ((0x2E80...0x9FFF).contains($1.value) ? 2 : 1) }
  }

  /// What a bar shows but its numbers: the id.
  func id(_ line: String) -> String {
    String(line.split(separator: "B ", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces)
  }

  func numbers(_ line: String) -> String {
    String(line.split(separator: "B ", maxSplits: 1).first ?? "")
  }

  @Test(.enabled(if: TerminalPane.tmux != nil, "tmux is not installed (scripts/setup installs it)"))
  func sixteenTransfersDrawInPlaceAndFollowTheWidth() throws {
    // 1 MiB at 160 KiB/s: about 6 s each, all at once.
    let fixture = try fixture(size: 1 << 20, rate: 160 << 10)
    let pane = try TerminalPane(folder: fixture.folder.path)
    try pane.type("sh run.sh; echo \"exit=$?\"")

    // All 16 in flight: eight bars, "… and 8 more" and the total (at most 10 s).
    let first = try #require(
      poll(pane, tries: 100) { screen in
        screen.contains { $0.wholeMatch(of: Self.moreLine) != nil } && bars(screen).count == 8
          && !screen.contains { $0.hasPrefix("completed") }
      }, "no 16 transfers in flight")
    checkLive(first, columns: 120)
    let long = try #require(bars(first).values.first { $0.contains("file.bin") && $0.contains("…") })
    #expect(long.hasSuffix("-name-file.bin"), "the long id keeps its end: \(long)")
    #expect(bars(first).values.contains { $0.hasSuffix("out/b-数据文件-日本語-ファイル.bin") })
    #expect(pane.format("#{history_size}") == "0")

    // The same rows, the same ids, other numbers: redrawn in place.
    let second = try #require(
      poll(pane, tries: 30) { screen in
        bars(screen).count == 8
          && bars(screen).contains { row, line in numbers(line) != numbers(bars(first)[row] ?? "") }
      }, "the bars did not change")
    checkLive(second, columns: 120)
    #expect(bars(second).mapValues(id) == bars(first).mapValues(id))
    #expect(pane.format("#{history_size}") == "0")

    // A narrower terminal: every line is cut to it and none wraps.
    try pane.command(["resize-window", "-t", "main", "-x", "70", "-y", "40"])
    let narrow = try #require(
      poll(pane, tries: 30) { screen in
        bars(screen).count == 8 && screen.allSatisfy { cells($0) < 70 }
      }, "the bars did not follow the width: \(pane.screen())")
    checkLive(narrow, columns: 70)
    // tmux rewraps the lines drawn at 120 columns and keeps the cursor's row: what the longer
    // lines push up goes to the scrollback, once; the bars drawn since are all on the screen.
    let pushed = Int(pane.format("#{history_size}")) ?? -1
    #expect((0...3).contains(pushed))

    // The end: each task's line, the closing line and the prompt; no bar left behind.
    let end = try #require(poll(pane, tries: 300) { $0.contains { $0.hasPrefix("exit=") } }, "the run did not end")
    let finished = pane.screen(joined: true).filter { !$0.hasPrefix(TerminalPane.prompt + "sh run.sh") }
    #expect(finished.contains("exit=0"), "\(finished)")
    #expect(finished.last == TerminalPane.prompt.trimmingCharacters(in: .whitespaces))
    let completed = finished.filter { $0.hasPrefix("completed out/") }
    #expect(completed.count == 16, "\(finished)")
    #expect(finished.contains { $0.hasPrefix("done: 16 completed, 0 failed") })
    #expect(finished.count == 16 + 1 + 1 + 1, "\(finished)")
    #expect(!end.contains { $0.contains("[=") || $0.contains("tasks  ") }, "\(end)")
    // No frame scrolled up: the scrollback holds what it held after the resize, and the screen.
    #expect(pane.format("#{history_size}") == "\(pushed)")
    #expect(pane.everything().count == pushed + pane.screen().count)
    #expect(pane.format("#{cursor_flag}") == "1")
    try saveCaptures([
      ("16-transfers", first), ("16-transfers-later", second), ("narrowed-to-70", narrow),
      ("finished", pane.everything()),
    ])
  }

  @Test(.enabled(if: TerminalPane.tmux != nil, "tmux is not installed (scripts/setup installs it)"))
  func ctrlCLeavesTheTerminalAsItWas() throws {
    // 4 MiB at 64 KiB/s: a minute each, stopped long before.
    let fixture = try fixture(size: 4 << 20, rate: 64 << 10)
    let pane = try TerminalPane(folder: fixture.folder.path)
    try pane.type("sh run.sh; echo \"exit=$?\"")
    let live = try #require(
      poll(pane, tries: 100) { screen in
        screen.contains { $0.wholeMatch(of: Self.moreLine) != nil } && bars(screen).count == 8
      }, "no 16 transfers in flight")
    checkLive(live, columns: 120)

    try pane.command(["send-keys", "-t", "main", "C-c"])
    let end = try #require(poll(pane, tries: 300) { $0.contains { $0.hasPrefix("exit=") } }, "the run did not stop")
    let screen = pane.screen(joined: true)
    #expect(screen.contains("exit=3"), "\(screen)")
    #expect(screen.contains("batchdl: stopping after checkpoints (press Ctrl-C again to stop at once)"), "\(screen)")
    #expect(screen.filter { $0.hasPrefix("cancelled out/") }.count == 16, "\(screen)")
    #expect(screen.contains { $0.hasPrefix("done: 0 completed, 16 cancelled, 0 failed") }, "\(screen)")
    #expect(!end.contains { $0.contains("[=") || $0.contains("[ ") || $0.contains("tasks  ") }, "bars left: \(end)")
    // Every line is one of the run's lines; the prompt is back at the start of its own line.
    for line in screen.dropFirst().dropLast(2) {
      #expect(
        line.hasPrefix("cancelled out/") || line.hasPrefix("done: ") || line.hasPrefix("batchdl: stopping"),
        "garbled: \(line)")
    }
    #expect(screen.last == TerminalPane.prompt.trimmingCharacters(in: .whitespaces), "\(screen)")
    #expect(pane.format("#{cursor_x} #{cursor_y}") == "\(TerminalPane.prompt.count) \(pane.screen().count - 1)")
    // The cursor shows, lines wrap, no attribute, no mode left on.
    #expect(pane.format("#{cursor_flag} #{wrap_flag} #{insert_flag} #{origin_flag}") == "1 1 0 0")
    #expect(!pane.screenWithAttributes().contains("\u{1B}"), "attributes left on the screen")
    #expect(pane.everything() == pane.screen())
    // Nothing reached its place: at most partial files beside it.
    for name in Self.names {
      #expect(!FileManager.default.fileExists(atPath: fixture.folder.path + "/out/" + name), "\(name)")
    }
    try saveCaptures([("16-transfers-before-ctrl-c", live), ("after-ctrl-c", screen)])
  }

  /// Keeps the captures in `BATCHDL_CAPTURES` (a folder) when it is set, to look at.
  func saveCaptures(_ captures: [(String, [String])]) throws {
    guard let folder = ProcessInfo.processInfo.environment["BATCHDL_CAPTURES"] else { return }
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    for (name, lines) in captures {
      try (lines.joined(separator: "\n") + "\n").write(
        toFile: folder + "/" + name + ".txt", atomically: true, encoding: .utf8)
    }
  }
}
