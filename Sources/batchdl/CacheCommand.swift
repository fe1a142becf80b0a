import ArgumentParser
import BatchDL
import BatchDLStore
import BatchDLSupport

#if canImport(Glibc)
  import Glibc
#endif

struct CacheCommand: ParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "cache",
    abstract: "Show or clear what the state folder keeps for a manifest.",
    subcommands: [Stats.self, Clear.self]
  )

  struct Location: ParsableArguments {
    @Argument(help: "The manifest.")
    var manifest: String

    @Option(help: ArgumentHelp("State folder (default: .batchdl/ beside the manifest).", valueName: "dir"))
    var state: String?

    func maintenance() throws -> StateMaintenance {
      let plan = try loadPlan(manifest, state: state)
      return StateMaintenance(plan: plan, state: stateFolder(state, for: plan))
    }
  }

  struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "stats",
      abstract: "Show the recorded results, checkpoints, partial files, HTTP caches and cookie jars.",
      discussion: """
        Example:
          batchdl cache stats mirror.yaml
        """
    )

    @OptionGroup var location: Location

    func run() throws {
      let maintenance = try location.maintenance()
      let stats: StateMaintenance.Stats
      do {
        stats = try maintenance.stats()
      } catch {
        throw fail(error)
      }
      print("state folder: \(maintenance.folder)")
      print("results: \(stats.results)")
      print("checkpoints: \(stats.checkpoints)")
      print("partial files: \(stats.partialFiles) (\(ProgressDisplay.bytes(stats.partialBytes)))")
      print("http cache: \(stats.cacheEntries) entries (\(ProgressDisplay.bytes(stats.cacheBytes)))")
      print("cookie jars: \(stats.cookieJars)")
    }
  }

  struct Clear: ParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "clear",
      abstract: "Remove checkpoints, partial files, HTTP caches and cookie jars.",
      discussion: """
        Unfinished downloads then start over, data tasks ask the network again and sessions \
        start without cookies. Asks first on a terminal; elsewhere, --yes is required. Finished \
        files and their results are kept, unless the state database is damaged: then it is \
        deleted, and finished files are downloaded again. Covers every shard's sub-folder.

        Example:
          batchdl cache clear mirror.yaml --yes
        """
    )

    @OptionGroup var location: Location

    @Flag(name: .shortAndLong, help: "Do not ask.")
    var yes = false

    func run() throws {
      var stderr = StandardError()
      let maintenance = try location.maintenance()
      if !yes {
        guard isatty(0) == 1 else {
          stderr.write("batchdl: not on a terminal; add --yes to clear \(maintenance.folder)\n")
          throw ExitCode(ExitStatus.invalid.rawValue)
        }
        let stats: StateMaintenance.Stats
        do {
          stats = try maintenance.stats()
        } catch {
          throw fail(error)
        }
        print(
          "Remove \(stats.checkpoints) checkpoints, \(stats.partialFiles) partial files "
            + "(\(ProgressDisplay.bytes(stats.partialBytes))), \(stats.cacheEntries) cached responses and "
            + "\(stats.cookieJars) cookie jars for \(location.manifest)? [y/N] ",
          terminator: "")
        guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
          print("nothing removed")
          return
        }
      }
      do {
        let cleared = try maintenance.clear()
        print(
          "cleared \(maintenance.folder): checkpoints, caches and cookies removed, \(cleared.partialFiles) partial "
            + "files deleted")
        for database in cleared.damagedDatabases {
          print("removed the damaged state database \(database): earlier results are forgotten")
        }
      } catch let held as StateLock.Held {
        stderr.write("batchdl: \(held)\n")
        throw ExitCode(ExitStatus.locked.rawValue)
      } catch let error as StateError {
        throw fail(error)
      }
    }
  }
}
