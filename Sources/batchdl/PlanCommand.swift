import ArgumentParser
import BatchDL
import BatchDLManifest
import BatchDLPlan
import BatchDLSupport

struct PlanCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "plan",
    abstract: "Print what 'run' would send, in order, without sending anything.",
    discussion: """
      Lists each request once with the tasks that share it, its position in the order \
      ('after:' first, then priority, then round-robin across hosts), whether 'run' would send \
      it, resume it (from which byte) or skip it as unchanged, and why, and, with --shards or \
      --shard, its shard. Metalink documents named by URL are fetched first (a conditional \
      request against the copy in the state folder); --offline uses the stored copies only. \
      Sessions with prune: list each file the run would delete ('delete PATH'), or why it would \
      delete nothing (prune-limit). Last, one line per filesystem gives the bytes the run \
      expects to write there (sizes known in advance; the others are counted as files of \
      unknown size) and the space free.

      Example:
        batchdl plan mirror.yaml
        batchdl plan mirror.yaml --shard 1/4 --json
      """
  )

  @Argument(help: "The manifest.")
  var manifest: String

  @Flag(help: "Print JSON (format batchdl-plan/1) instead of text.")
  var json = false

  @Option(help: ArgumentHelp("List only this shard's requests (I from 0 to N-1).", valueName: "I/N"))
  var shard: String?

  @Option(help: "Show each request's shard among N shards.")
  var shards: Int?

  @Option(help: ArgumentHelp("State folder (default: .batchdl/ beside the manifest).", valueName: "dir"))
  var state: String?

  @Flag(help: "Show what 'run --refresh' would do.")
  var refresh = false

  @Flag(help: "Send nothing: use the stored copies of documents named by URL (metalink:).")
  var offline = false

  @Option(
    help: ArgumentHelp("Show what 'run --max-delete' would prune, in place of prune.max_delete.", valueName: "N|P%"))
  var maxDelete: String?

  func validate() throws {
    if let maxDelete, case .failure(let problem) = PruneLimit.parse(maxDelete, what: "--max-delete") {
      throw ValidationError(problem.message)
    }
    if let shard, case .failure(let problem) = Shard.parse(shard) { throw ValidationError(problem.description) }
    if let shards, shards < 1 || shards > Limits.count {
      throw ValidationError("--shards must be from 1 to \(Limits.count), found \(shards)")
    }
  }

  func run() throws {
    let plan = try loadPlan(manifest, descriptors: offline ? .stored : .fetch, state: state)
    let selected = shard.flatMap { try? Shard.parse($0).get() }
    var listing = PlanListing(plan: plan, shard: selected, shardCount: shards)
    listing.refresh = refresh
    do {
      // A sharded run keeps its state in its own sub-folder: read the one `run --shard` writes.
      let folder = stateFolder(state, for: plan, shard: selected)
      listing.prior = try folder.prior()
      if plan.manifest.sessions.contains(where: { $0.prune != nil }) {
        listing.prune = PruneDecisions.prunePlans(
          plan: plan, records: try folder.placedFiles(), stateFolder: folder.path,
          maxDelete: maxDelete.flatMap { try? PruneLimit.parse($0, what: "--max-delete").get() })
      }
    } catch {
      throw fail(error)
    }
    listing.showsSpace = true
    var out = BufferedOutput()
    if json {
      listing.writeJSON(to: &out)
    } else {
      listing.writeText(to: &out)
    }
    out.flush()
  }
}
