/// `--shard I/N`: which part of a plan one machine runs.
public struct Shard: Hashable, Sendable, CustomStringConvertible {
  public var index: Int
  public var count: Int

  public init(index: Int, count: Int) {
    self.index = index
    self.count = count
  }

  public struct Problem: Error, CustomStringConvertible {
    public var description: String
  }

  /// Parses `I/N` with 0 ≤ I < N.
  public static func parse(_ text: String) -> Result<Shard, Problem> {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]) else {
      return .failure(Problem(description: "'\(text)' is not a shard: write I/N, e.g. 0/4 for the first of four"))
    }
    guard count >= 1, count <= 1_000_000 else {
      return .failure(Problem(description: "shard count \(count) must be from 1 to 1000000"))
    }
    guard index >= 0, index < count else {
      return .failure(Problem(description: "shard index \(index) must be from 0 to \(count - 1) for \(count) shards"))
    }
    return .success(Shard(index: index, count: count))
  }

  public var description: String { "\(index)/\(count)" }

  /// `I/N`, or `auto`: the index from a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, with the
  /// count from `shards`) or a Slurm job array (`SLURM_ARRAY_TASK_ID` less `SLURM_ARRAY_TASK_MIN`,
  /// out of `SLURM_ARRAY_TASK_COUNT`).
  public static func resolve(_ text: String, shards: Int?, environment: [String: String]) -> Result<Shard, Problem> {
    guard text == "auto" else { return parse(text) }
    if let value = environment["JOB_COMPLETION_INDEX"] {
      guard let index = Int(value) else {
        return .failure(Problem(description: "JOB_COMPLETION_INDEX is '\(value)', not a number"))
      }
      guard let shards else {
        return .failure(
          Problem(description: "--shard auto in a Kubernetes Indexed Job needs --shards N (the Job's completions)"))
      }
      return parse("\(index)/\(shards)")
    }
    if let value = environment["SLURM_ARRAY_TASK_ID"] {
      guard let id = Int(value), let count = environment["SLURM_ARRAY_TASK_COUNT"].flatMap({ Int($0) }) ?? shards else {
        return .failure(
          Problem(description: "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not (or give --shards N)"))
      }
      let minimum = environment["SLURM_ARRAY_TASK_MIN"].flatMap { Int($0) } ?? 0
      let (index, overflow) = id.subtractingReportingOverflow(minimum)
      guard !overflow else {
        return .failure(
          Problem(description: "SLURM_ARRAY_TASK_ID (\(id)) less SLURM_ARRAY_TASK_MIN (\(minimum)) is out of range"))
      }
      return parse("\(index)/\(count)")
    }
    return .failure(
      Problem(
        description:
          "--shard auto found neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID "
          + "(a Slurm job array); give --shard I/N"))
  }

  /// Jump consistent hash (Lamping and Veach): a key keeps its bucket when other keys come and go,
  /// and moves only when it must when the count grows.
  public static func bucket(for key: RequestKey, count: Int) -> Int {
    guard count > 1 else { return 0 }
    var state = key.high ^ key.low
    var bucket: Int64 = -1
    var next: Int64 = 0
    while next < Int64(count) {
      bucket = next
      state = state &* 2_862_933_555_777_941_757 &+ 1
      let divisor = Double((state >> 33) &+ 1)
      next = Int64(Double(bucket &+ 1) * (Double(Int64(1) << 31) / divisor))
    }
    return Int(bucket)
  }

  /// Whether `request` belongs to this shard.
  public func contains(_ request: PlannedRequest) -> Bool {
    Shard.bucket(for: request.shardKey, count: count) == index
  }
}
