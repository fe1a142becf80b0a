import Testing

@testable import BatchDLManifest

/// Which index files of a suite a mirror fetches, reads and publishes.
@Suite struct AptIndexSelectionTests {
  /// A Release listing `paths`, each with a digest made of its position.
  static func release(_ paths: [String], byHash: Bool = true) throws -> AptRelease {
    let lines = paths.enumerated().map { index, path in
      " " + String(repeating: String(index % 10), count: 64) + " \(100 + index) \(path)\n"
    }
    let text = """
      Suite: stable
      Architectures: amd64 arm64 all
      Components: main contrib
      Acquire-By-Hash: \(byHash ? "yes" : "no")
      SHA256:

      """ + lines.joined()
    return try AptRelease.parse(Array(text.utf8)).get()
  }

  static let debianLike = [
    "contrib/Contents-all", "contrib/Contents-all.gz", "contrib/Contents-amd64.gz", "contrib/binary-all/Packages",
    "contrib/binary-all/Packages.xz", "contrib/binary-amd64/Packages", "contrib/binary-amd64/Packages.gz",
    "contrib/binary-amd64/Packages.xz", "contrib/binary-amd64/Release", "contrib/binary-arm64/Packages.xz",
    "contrib/i18n/Translation-en", "contrib/i18n/Translation-en.bz2", "contrib/source/Sources.xz",
    "main/Contents-amd64.gz", "main/Contents-arm64.gz", "main/Contents-source.gz", "main/Contents-udeb-amd64.gz",
    "main/binary-amd64/Packages", "main/binary-amd64/Packages.gz", "main/binary-amd64/Packages.xz",
    "main/binary-amd64/Release", "main/binary-arm64/Packages.xz", "main/debian-installer/binary-amd64/Packages.xz",
    "main/dep11/Components-amd64.yml.gz", "main/dep11/Components-arm64.yml.gz", "main/dep11/icons-64x64.tar.gz",
    "main/cnf/Commands-amd64.xz", "main/i18n/Index", "main/i18n/Translation-de.bz2", "main/i18n/Translation-en.xz",
    "main/source/Release", "main/source/Sources", "main/source/Sources.gz", "main/source/Sources.xz",
    "non-free/binary-amd64/Packages.xz", "Contents-amd64.gz", "Contents-arm64.gz",
  ]

  static func paths(_ plan: AptIndexPlan, _ filter: (AptIndexTarget) -> Bool = { _ in true }) -> [String] {
    plan.targets.filter(filter).map { String(decoding: $0.releasePath, as: UTF8.self) }
  }

  @Test func mirrorsEveryVariantOfTheChosenComponentsAndArchitectures() throws {
    let plan = try AptIndexSelection.select(
      release: Self.release(Self.debianLike), suite: "stable", components: ["main"], architectures: ["amd64"],
      sources: false
    ).get()
    #expect(
      Self.paths(plan) == [
        "main/Contents-amd64.gz", "main/binary-amd64/Packages", "main/binary-amd64/Packages.gz",
        "main/binary-amd64/Packages.xz", "main/binary-amd64/Release", "main/dep11/Components-amd64.yml.gz",
        "main/dep11/icons-64x64.tar.gz", "main/cnf/Commands-amd64.xz", "main/i18n/Index",
        "main/i18n/Translation-de.bz2",
        "main/i18n/Translation-en.xz", "Contents-amd64.gz",
      ])
    #expect(Self.paths(plan) { $0.isRead } == ["main/binary-amd64/Packages.xz"])
    #expect(Self.paths(plan) { $0.isOptional } == ["main/binary-amd64/Packages"])
    #expect(plan.missing.isEmpty)
    let kinds = plan.targets.map(\.kind)
    #expect(kinds.filter { $0 == .packages }.count == 3 && kinds.filter { $0 == .translation }.count == 2)
    #expect(kinds.filter { $0 == .contents }.count == 2)
  }

  @Test func sourcesAndSeveralComponents() throws {
    let plan = try AptIndexSelection.select(
      release: Self.release(Self.debianLike), suite: "stable", components: ["main", "contrib"],
      architectures: ["amd64", "all", "arm64"], sources: true
    ).get()
    #expect(
      Self.paths(plan) { $0.isRead } == [
        "contrib/binary-all/Packages.xz", "contrib/binary-amd64/Packages.xz", "contrib/binary-arm64/Packages.xz",
        "contrib/source/Sources.xz", "main/binary-amd64/Packages.xz", "main/binary-arm64/Packages.xz",
        "main/source/Sources.xz",
      ])
    #expect(Self.paths(plan) { $0.kind == .contents }.contains("main/Contents-source.gz"))
    #expect(
      !Self.paths(plan).contains { $0.contains("udeb") || $0.contains("debian-installer") || $0.contains("non-free") })
    #expect(plan.missing == ["the Release of stable lists no main/binary-all/Packages"])
  }

  @Test func decompressorsChooseTheVariantRead() throws {
    let release = try Self.release(Self.debianLike)
    let gzipOnly = try AptIndexSelection.select(
      release: release, suite: "stable", components: ["main"], architectures: ["amd64", "arm64"], sources: false,
      decompressors: [.gzip, .none]
    ).get()
    #expect(Self.paths(gzipOnly) { $0.isRead } == ["main/binary-amd64/Packages.gz"])
    #expect(
      gzipOnly.missing == ["the Release of stable lists main/binary-arm64/Packages in no compression batchdl reads"])
    let plainOnly = try AptIndexSelection.select(
      release: release, suite: "stable", components: ["main"], architectures: ["amd64"], sources: false,
      decompressors: [.none]
    ).get()
    #expect(Self.paths(plainOnly) { $0.isRead } == ["main/binary-amd64/Packages"])
    #expect(Self.paths(plainOnly) { $0.isOptional }.isEmpty)
  }

  @Test func byHashPaths() throws {
    let plan = try AptIndexSelection.select(
      release: Self.release(Self.debianLike), suite: "stable/updates", components: ["main"], architectures: ["amd64"],
      sources: false
    ).get()
    let packages = try #require(plan.targets.first { $0.isRead })
    let digest = packages.sha256
    #expect(String(decoding: packages.path, as: UTF8.self) == "dists/stable/updates/main/binary-amd64/Packages.xz")
    #expect(
      packages.byHashPath.map { String(decoding: $0, as: UTF8.self) }
        == "dists/stable/updates/main/binary-amd64/by-hash/SHA256/\(digest)")
    #expect(packages.fetchPath == packages.byHashPath)
    let top = try #require(plan.targets.first { $0.releasePath == Array("Contents-amd64.gz".utf8) })
    #expect(
      top.byHashPath.map { String(decoding: $0, as: UTF8.self) } == "dists/stable/updates/by-hash/SHA256/\(top.sha256)")
    let plain = try AptIndexSelection.select(
      release: Self.release(Self.debianLike, byHash: false), suite: "stable", components: ["main"],
      architectures: ["amd64"], sources: false
    ).get()
    #expect(plain.targets.allSatisfy { $0.byHashPath == nil && $0.fetchPath == $0.path })
  }

  @Test func missingComponentsAndArchitecturesAreNamed() throws {
    let plan = try AptIndexSelection.select(
      release: Self.release(Self.debianLike), suite: "stable", components: ["main", "universe"],
      architectures: ["amd64", "riscv64"], sources: false
    ).get()
    #expect(
      plan.missing == [
        "the Release of stable lists no component 'universe'",
        "the Release of stable lists no architecture 'riscv64'",
        "the Release of stable lists no main/binary-riscv64/Packages",
        "the Release of stable lists no universe/binary-amd64/Packages",
        "the Release of stable lists no universe/binary-riscv64/Packages",
      ])
  }

  @Test(arguments: ["../x", "/stable", "a//b", "", "st\u{0}able"])
  func refusesHostileSuiteNames(suite: String) throws {
    let result = AptIndexSelection.select(
      release: try Self.release(["main/binary-amd64/Packages"]), suite: suite, components: ["main"],
      architectures: ["amd64"], sources: false)
    guard case .failure = result else {
      Issue.record("suite '\(suite)' accepted")
      return
    }
  }
}
