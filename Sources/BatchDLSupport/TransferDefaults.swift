/// What a session's transfers get when nothing in the manifest says otherwise, in one place: the
/// decoder gives them to a session's settings, the engine and the fetch of documents before
/// planning fall back on them. In Support, below both Manifest and Transfer, so that neither
/// needs the other for them.
public enum TransferDefaults {
  /// The longest a transfer keeps waiting without a `timeouts.resource` (ten minutes, in
  /// milliseconds): for the network to come back (`waits_for_connectivity`) or for the network
  /// policy to let it go; a document fetched before planning never takes longer, whatever its
  /// session's budget.
  public static let resourceLimitMilliseconds: Int64 = 600_000

  /// `network.max_connections_per_host` when neither the session nor `defaults:` gives it, and
  /// libcurl's cap on connections to one host before any job says more.
  public static let connectionsPerHost = 6
}
