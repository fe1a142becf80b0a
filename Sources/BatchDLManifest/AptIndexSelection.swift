/// An index file of a suite that a mirror fetches and publishes.
public struct AptIndexTarget: Hashable, Sendable {
  public enum Kind: Hashable, Sendable {
    /// `COMPONENT/binary-ARCH/Packages*`.
    case packages
    /// `COMPONENT/source/Sources*`.
    case sources
    /// `COMPONENT/i18n/Translation-*`.
    case translation
    /// `COMPONENT/Contents-ARCH*`, or `Contents-ARCH*` beside the Release (the older layout).
    case contents
    /// Anything else mirrored: `binary-ARCH/Release`, `i18n/Index`, `dep11/…`, `cnf/…`.
    case other
  }

  public enum Compression: Hashable, Sendable {
    case none, gzip, xz
    /// bzip2, lzma, lz4 or zstd: mirrored, never read by batchdl.
    case other
  }

  public var kind: Kind
  /// Relative to `dists/SUITE/`, as the Release lists it.
  public var releasePath: [UInt8]
  /// Relative to the repository's root: `dists/SUITE/` + `releasePath`.
  public var path: [UInt8]
  /// Where to fetch it from, relative to the repository's root: `byHashPath` when the Release says
  /// `Acquire-By-Hash: yes`, else `path`.
  public var fetchPath: [UInt8]
  /// `dists/SUITE/FOLDER/by-hash/SHA256/<digest>` when the Release says `Acquire-By-Hash: yes`: the
  /// mirror publishes the file there too (clients that use by-hash fetch it from there).
  public var byHashPath: [UInt8]?
  public var size: Int64
  public var sha256: String
  public var component: String?
  public var architecture: String?
  public var compression: Compression
  /// The one variant of its index that batchdl reads for pool files (per component and
  /// architecture for `Packages`, per component for `Sources`).
  public var isRead: Bool
  /// An uncompressed index listed beside a compressed variant: Debian's archive lists such files
  /// without serving them (apt verifies what it decompresses against them), so a 404 on it is no
  /// failure; the mirror publishes it when the server has it.
  public var isOptional: Bool
}

/// Which index files a mirror fetches from a suite, and what the Release lacks.
public struct AptIndexPlan: Sendable {
  public var targets: [AptIndexTarget] = []
  /// Components and architectures asked for that the Release does not list, and `Packages` or
  /// `Sources` that it lists in no form batchdl reads: one sentence each.
  public var missing: [String] = []
}

/// Chooses the index files of a suite to mirror.
///
/// A mirror publishes every index file apt may ask for (each client fetches the compressions it
/// supports), so every variant the Release lists is mirrored for the chosen components and
/// architectures:
/// - `COMPONENT/binary-ARCH/*` (`Packages`, `.gz`, `.xz`, any other compression, and its `Release`);
/// - `COMPONENT/source/*` when `sources` is asked;
/// - `COMPONENT/i18n/*` (every `Translation-LANG`, and `Index`);
/// - `COMPONENT/Contents-ARCH*` and `Contents-ARCH*` (and `Contents-source*` with `sources`);
/// - `COMPONENT/dep11/Components-ARCH.yml*`, `CID-Index-ARCH.json*`, `icons-*` (AppStream), and
///   `COMPONENT/cnf/Commands-ARCH*` (command-not-found).
///
/// Not mirrored: other architectures, `debian-installer/` (udebs) and `Contents-udeb-*`.
/// Of each `Packages` (and `Sources`), batchdl reads one variant: `.xz`, else `.gz`, else the
/// plain file, among those the Release lists and `decompressors` allows.
public enum AptIndexSelection {
  public static func select(
    release: AptRelease, suite: String, components: [String], architectures: [String], sources: Bool,
    decompressors: Set<AptIndexTarget.Compression> = [.xz, .gzip, .none]
  ) -> Result<AptIndexPlan, AptReleaseProblem> {
    let suiteBytes = Array(suite.utf8)
    if let problem = AptPath.problem(suiteBytes) {
      return .failure(AptReleaseProblem(line: 0, message: "the suite '\(AptPath.shown(suiteBytes))': \(problem)"))
    }
    var plan = AptIndexPlan()
    if !release.components.isEmpty {
      for component in components where !release.components.contains(component) {
        plan.missing.append("the Release of \(suite) lists no component '\(component)'")
      }
    }
    if !release.architectures.isEmpty {
      for architecture in architectures where !release.architectures.contains(architecture) {
        plan.missing.append("the Release of \(suite) lists no architecture '\(architecture)'")
      }
    }
    let root = Array("dists/".utf8) + suiteBytes + [0x2F]
    for file in release.files {
      guard let found = classify(file.path, components: components, architectures: architectures, sources: sources)
      else { continue }
      var target = AptIndexTarget(
        kind: found.kind, releasePath: file.path, path: root + file.path, fetchPath: root + file.path, byHashPath: nil,
        size: file.size, sha256: file.sha256, component: found.component, architecture: found.architecture,
        compression: compression(of: file.path), isRead: false, isOptional: false)
      if release.acquireByHash {
        let folder = file.path.lastIndex(of: 0x2F).map { Array(file.path[...$0]) } ?? []
        let byHash = root + folder + Array("by-hash/SHA256/\(file.sha256)".utf8)
        target.byHashPath = byHash
        target.fetchPath = byHash
      }
      plan.targets.append(target)
    }
    markVariants(
      &plan, components: components, architectures: architectures, sources: sources, suite: suite,
      decompressors: decompressors)
    return .success(plan)
  }

  /// Marks the variant of each `Packages` and `Sources` that is read, and the optional ones.
  private static func markVariants(
    _ plan: inout AptIndexPlan, components: [String], architectures: [String], sources: Bool, suite: String,
    decompressors: Set<AptIndexTarget.Compression>
  ) {
    var groups: [(kind: AptIndexTarget.Kind, component: String, architecture: String?)] = []
    for component in components {
      for architecture in architectures { groups.append((.packages, component, architecture)) }
      if sources { groups.append((.sources, component, nil)) }
    }
    for group in groups {
      let members = plan.targets.indices.filter {
        plan.targets[$0].kind == group.kind && plan.targets[$0].component == group.component
          && plan.targets[$0].architecture == group.architecture
      }
      let name = group.kind == .packages ? "Packages" : "Sources"
      let folder = group.architecture.map { "\(group.component)/binary-\($0)" } ?? "\(group.component)/source"
      var chosen: Int?
      for compression in [AptIndexTarget.Compression.xz, .gzip, .none] where decompressors.contains(compression) {
        chosen = members.first { plan.targets[$0].compression == compression }
        if chosen != nil { break }
      }
      if let chosen {
        plan.targets[chosen].isRead = true
      } else {
        plan.missing.append(
          members.isEmpty
            ? "the Release of \(suite) lists no \(folder)/\(name)"
            : "the Release of \(suite) lists \(folder)/\(name) in no compression batchdl reads")
      }
      if members.contains(where: { plan.targets[$0].compression != .none }) {
        for member in members where plan.targets[member].compression == .none && !plan.targets[member].isRead {
          plan.targets[member].isOptional = true
        }
      }
    }
  }

  private static func compression(of path: [UInt8]) -> AptIndexTarget.Compression {
    let text = String(decoding: path, as: UTF8.self)
    if text.hasSuffix(".xz") { return .xz }
    if text.hasSuffix(".gz") { return .gzip }
    for suffix in [".bz2", ".lzma", ".lz4", ".zst"] where text.hasSuffix(suffix) { return .other }
    return .none
  }

  /// `name` without a compression suffix.
  private static func stem(_ name: String) -> String {
    for suffix in [".xz", ".gz", ".bz2", ".lzma", ".lz4", ".zst"] where name.hasSuffix(suffix) {
      return String(name.dropLast(suffix.count))
    }
    return name
  }

  /// What the file at `path` (relative to `dists/SUITE/`) is, or nil when it is not mirrored.
  static func classify(
    _ path: [UInt8], components: [String], architectures: [String], sources: Bool
  )
    -> (kind: AptIndexTarget.Kind, component: String?, architecture: String?)?
  {
    // Names are ASCII in every real Release; anything else is never mirrored.
    guard path.allSatisfy({ $0 < 0x80 }) else { return nil }
    let text = String(decoding: path, as: UTF8.self)
    let topName = stem(text)
    if !text.contains("/") {
      if topName.hasPrefix("Contents-") {
        let arch = String(topName.dropFirst("Contents-".count))
        if architectures.contains(arch) || (sources && arch == "source") {
          return (.contents, nil, arch == "source" ? nil : arch)
        }
      }
      return nil
    }
    for component in components {
      let prefix = component + "/"
      guard text.hasPrefix(prefix) else { continue }
      let rest = String(text.dropFirst(prefix.count))
      if let found = classifyInComponent(rest, architectures: architectures, sources: sources) {
        return (found.kind, component, found.architecture)
      }
    }
    return nil
  }

  private static func classifyInComponent(
    _ rest: String, architectures: [String], sources: Bool
  )
    -> (kind: AptIndexTarget.Kind, architecture: String?)?
  {
    let parts = rest.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    let name = stem(parts[parts.count - 1])
    if parts.count == 2, parts[0].hasPrefix("binary-") {
      let arch = String(parts[0].dropFirst("binary-".count))
      guard architectures.contains(arch) else { return nil }
      return (name == "Packages" ? .packages : .other, arch)
    }
    if parts.count == 2, parts[0] == "source" {
      guard sources else { return nil }
      return (name == "Sources" ? .sources : .other, nil)
    }
    if parts.count == 2, parts[0] == "i18n" {
      return (name.hasPrefix("Translation-") ? .translation : .other, nil)
    }
    if parts.count == 1, name.hasPrefix("Contents-") {
      let arch = String(name.dropFirst("Contents-".count))
      if architectures.contains(arch) { return (.contents, arch) }
      if sources && arch == "source" { return (.contents, nil) }
      return nil
    }
    if parts.count == 2, parts[0] == "dep11" {
      if name.hasPrefix("icons-") { return (.other, nil) }
      for arch in architectures where name == "Components-\(arch).yml" || name == "CID-Index-\(arch).json" {
        return (.other, arch)
      }
      return nil
    }
    if parts.count == 2, parts[0] == "cnf" {
      for arch in architectures where name == "Commands-\(arch)" { return (.other, arch) }
    }
    return nil
  }
}
