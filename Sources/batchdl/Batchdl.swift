import ArgumentParser
import BatchDL

@main
struct Batchdl: ParsableCommand {
  static let configuration = CommandConfiguration(abstract: "batchdl")
}
