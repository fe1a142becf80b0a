import BatchDLStore

/// What a state folder holds for a manifest, read as the run reads it (`PriorState`).
extension StateFolder {
  /// What earlier runs recorded for this manifest here.
  public func prior() throws(StateError) -> PriorState {
    try load(try openStore(readOnly: true))
  }

  /// What `store` (opened from this folder) holds for this manifest.
  public func load(_ store: StateStore?) throws(StateError) -> PriorState {
    do {
      return try PriorState.load(from: store)
    } catch {
      throw StateError(error, database: database, arguments: arguments)
    }
  }

  /// The files earlier runs of this manifest placed here (`prune:`), read-only.
  public func placedFiles() throws(StateError) -> [PlacedFile] {
    let store = try openStore(readOnly: true)
    do {
      return try store?.placed() ?? []
    } catch {
      throw StateError(error, database: database, arguments: arguments)
    }
  }

  /// What every run recorded for this manifest: unsharded, then each shard's folder. A task
  /// recorded in several keeps its first completed (or unchanged) result.
  public func priorOfAllShards() throws(StateError) -> PriorState {
    var merged = try forShard(nil).prior()
    for shard in shards() {
      let prior = try forShard(shard).prior()
      for result in prior.results.values {
        let kept = merged.results[result.taskID]?.outcome
        if kept != TaskOutcome.completed.rawValue && kept != TaskOutcome.unchanged.rawValue {
          merged.results.add(result)
        }
      }
      merged.checkpoints.merge(prior.checkpoints) { kept, _ in kept }
      merged.budgets.merge(prior.budgets) { kept, _ in kept }
    }
    return merged
  }
}
