import BatchDLPlan
import BatchDLStore
import BatchDLSupport
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// One line of `plan`'s space check: the bytes a run expects to write on one filesystem (the
/// sessions whose `dest` is on it, told by `st_dev` of the nearest folder that exists), and the
/// space free there.
public struct PlanSpace: Sendable, Equatable {
  /// The sessions' `dest` folders on this filesystem, as the manifest names them.
  public var dests: [String] = []
  public var sessions: [String] = []
  /// The sum of the sizes known in advance (`size:`, a list line's `size:N`, Metalink `<size>`,
  /// the size an `index:` listing gives), less what checkpoints already hold.
  public var expected: Int64 = 0
  /// Files the run would write whose size is not known in advance.
  public var unknown = 0
  /// Bytes an unprivileged user may still write there (`statvfs`: `f_bavail * f_frsize`); nil
  /// when it cannot be told.
  public var free: Int64?

  /// The filesystem of each session of `plan` and what the requests `included` (each with what
  /// the run would do with it) write there; one entry per filesystem, in the sessions' order.
  public static func lines(
    plan: Plan, included: (PlannedRequest) -> Bool, action: (PlannedRequest) -> RequestAction?
  ) -> [PlanSpace] {
    var tally = Tally(sessions: plan.manifest.sessions.count)
    for request in plan.requests where included(request) { tally.add(request, action: action(request), in: plan) }
    return lines(plan: plan, tally: tally)
  }

  /// What each session's requests write, added up request by request as a listing goes (the
  /// listing has each request's action at hand: it is not asked twice).
  public struct Tally: Sendable {
    var perSession: [(expected: Int64, unknown: Int)]

    public init(sessions: Int) {
      perSession = Array(repeating: (0, 0), count: sessions)
    }

    /// Adds what `request` writes when the run does `action` with it (nil: sends it).
    public mutating func add(_ request: PlannedRequest, action: RequestAction?, in plan: Plan) {
      if action == .unchanged { return }
      var offset: Int64 = 0
      if case .resume(let from) = action { offset = from }
      let owner = plan.owner(of: request)
      for task in plan.tasks(of: request) where !task.to.isNone {
        // Every destination is written: a shared request's copies too.
        // A size a listing gives is what the file is expected to be (`Plan.expectedSize`).
        if let size = plan.expectedSize(of: task)?.bytes {
          let resumed = owner.map { $0.id == task.id } ?? false ? offset : 0
          let (sum, overflow) = perSession[Int(task.session)].expected.addingReportingOverflow(max(0, size - resumed))
          perSession[Int(task.session)].expected = overflow ? .max : sum
        } else {
          perSession[Int(task.session)].unknown += 1
        }
      }
    }
  }

  /// One entry per filesystem of the sessions' `dest`, with what `tally` says they write.
  public static func lines(plan: Plan, tally: Tally) -> [PlanSpace] {
    let perSession = tally.perSession
    var lines: [PlanSpace] = []
    var byDevice: [UInt64: Int] = [:]
    for (index, session) in plan.manifest.sessions.enumerated() {
      let root = FileAccess.normalize(plan.absolute(session.dest.isEmpty ? "." : session.dest))
      let (device, free) = filesystem(of: root)
      let shown = session.dest.isEmpty ? "./" : session.dest.hasSuffix("/") ? session.dest : session.dest + "/"
      let line: Int
      if let device, let known = byDevice[device] {
        line = known
      } else {
        line = lines.count
        lines.append(PlanSpace(free: free))
        if let device { byDevice[device] = line }
      }
      if !lines[line].dests.contains(shown) { lines[line].dests.append(shown) }
      lines[line].sessions.append(session.name)
      let (sum, overflow) = lines[line].expected.addingReportingOverflow(perSession[index].expected)
      lines[line].expected = overflow ? .max : sum
      lines[line].unknown += perSession[index].unknown
    }
    return lines
  }

  /// The device and free bytes of the filesystem `path` is (or would be) on: that of the nearest
  /// folder of it that exists.
  static func filesystem(of path: String) -> (device: UInt64?, free: Int64?) {
    var existing = path
    var info = stat()
    while stat(existing, &info) != 0 {
      let up = FileAccess.directory(of: existing)
      if up == existing || up.isEmpty { return (nil, nil) }
      existing = up
    }
    var space = statvfs()
    let free = statvfs(existing, &space) == 0 ? Int64(space.f_bavail) * Int64(space.f_frsize) : nil
    return (UInt64(info.st_dev), free)
  }

  /// The line `plan` prints.
  public var text: String {
    var line = "space: " + Self.bytes(expected) + " to write"
    if unknown > 0 { line += " and \(unknown) file\(unknown == 1 ? "" : "s") of unknown size" }
    line += " in " + dests.joined(separator: ", ")
    line += " (session\(sessions.count == 1 ? "" : "s") " + sessions.joined(separator: ", ") + ")"
    line += free.map { "; " + Self.bytes($0) + " free on that filesystem" } ?? "; free space unknown"
    if let free, expected > free { line += " — NOT ENOUGH" }
    return line
  }

  var json: JSON {
    var fields: [String: JSON] = [
      "dests": .array(dests.map { .string($0) }), "sessions": .array(sessions.map { .string($0) }),
      "expected_bytes": .int(expected), "unknown_files": .int(unknown),
    ]
    if let free { fields["free_bytes"] = .int(free) }
    return .object(fields)
  }

  /// `512 B`, `1.5 KiB`, `3.2 GiB`.
  static func bytes(_ count: Int64) -> String {
    let units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
    guard count >= 1024 else { return "\(count) B" }
    var value = Double(count) / 1024
    var unit = 0
    while value >= 1024 && unit < units.count - 1 {
      value /= 1024
      unit += 1
    }
    return TextFormat.fixed(value, decimals: 1) + " " + units[unit]
  }
}
