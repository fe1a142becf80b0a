// swift-tools-version:6.2
import Foundation
import PackageDescription

let strict: [SwiftSetting] = [.treatAllWarnings(as: .error)]
// Release builds of the library leave out the run-time exclusivity checks (debug builds and the
// tests keep them): they cost about 6,000 instructions a file on a run of small files
// (bench/callgrind), and the compiler still rejects every access conflict it can see.
// The library is six modules (its layers): cross-module optimization lets the optimizer inline
// across them as whole-module optimization did within one (bench/plan was 7-8% slower without).
let release: [SwiftSetting] = [
  .unsafeFlags(["-enforce-exclusivity=unchecked", "-cross-module-optimization"], .when(configuration: .release))
]

let package = Package(
  name: "batchdl",
  platforms: [.macOS(.v13)],
  products: [
    .executable(name: "batchdl", targets: ["batchdl"]),
    .library(
      name: "BatchDL",
      targets: ["BatchDL", "BatchDLSupport", "BatchDLTransfer", "BatchDLManifest", "BatchDLPlan", "BatchDLStore"]),
    .executable(name: "batchdl-testserver", targets: ["batchdl-testserver"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
  ],
  targets: [
    .target(
      name: "CCurl",
      cSettings: [.unsafeFlags(["-Wall", "-Werror"])],
      linkerSettings: [.linkedLibrary("curl")]
    ),
    .target(
      name: "CSystem",
      cSettings: [.unsafeFlags(["-Wall", "-Werror"])]
    ),
    .target(
      name: "CEarlySignals",
      cSettings: [.unsafeFlags(["-Wall", "-Werror"])]
    ),
    // libxml2's parser, for what Foundation's XMLParser does not let batchdl set: whether a
    // document has a DTD, found with entities off and nothing loaded.
    .target(
      name: "CXML",
      cSettings: [.unsafeFlags(["-Wall", "-Werror", "-I/usr/include/libxml2"])],
      linkerSettings: [.linkedLibrary("xml2")]
    ),
    // zlib and liblzma, for the .gz and .xz indexes of package repositories (decompressed
    // streaming and bounded): the decoder state behind an opaque pointer, since both libraries
    // keep pointers to it and their init functions are macros.
    .target(
      name: "CCompression",
      cSettings: [.unsafeFlags(["-Wall", "-Werror"])],
      linkerSettings: [.linkedLibrary("z"), .linkedLibrary("lzma")]
    ),
    .systemLibrary(
      name: "CYAML",
      pkgConfig: "yaml-0.1",
      providers: [.apt(["libyaml-dev"])]
    ),
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]
    ),
    .target(
      name: "BatchDLSupport",
      dependencies: [
        "CCompression",
        "CCurl",
        "CSystem",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict + release
    ),
    .target(
      name: "BatchDLTransfer",
      dependencies: [
        "BatchDLSupport",
        "CCurl",
        "CSystem",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict + release
    ),
    .target(
      name: "BatchDLManifest",
      dependencies: [
        "BatchDLSupport",
        "BatchDLTransfer",
        "CXML",
        "CYAML",
      ],
      swiftSettings: strict + release
    ),
    .target(
      name: "BatchDLPlan",
      dependencies: [
        "BatchDLSupport",
        "BatchDLTransfer",
        "BatchDLManifest",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict + release
    ),
    .target(
      name: "BatchDLStore",
      dependencies: [
        "BatchDLSupport",
        "BatchDLTransfer",
        "BatchDLManifest",
        "BatchDLPlan",
        "CSQLite",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict + release
    ),
    .target(
      name: "BatchDL",
      dependencies: [
        "BatchDLSupport",
        "BatchDLTransfer",
        "BatchDLManifest",
        "BatchDLPlan",
        "BatchDLStore",
        "CCurl",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict + release
    ),
    .executableTarget(
      name: "batchdl",
      dependencies: [
        "BatchDL", "BatchDLSupport", "BatchDLManifest", "BatchDLPlan", "BatchDLStore",
        "CEarlySignals",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "TestServer",
      dependencies: [.product(name: "Crypto", package: "swift-crypto")],
      path: "Sources/TestServer",
      swiftSettings: strict
    ),
    .executableTarget(
      name: "batchdl-testserver",
      dependencies: [
        "TestServer",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
      ],
      swiftSettings: strict
    ),
    .target(
      name: "TestSupport",
      dependencies: ["BatchDL", "BatchDLManifest", "BatchDLPlan"],
      path: "Tests/TestSupport",
      swiftSettings: strict
    ),
    .testTarget(
      name: "ManifestTests",
      dependencies: ["BatchDL", "BatchDLSupport", "BatchDLTransfer", "BatchDLManifest", "TestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "PlanTests",
      dependencies: ["BatchDL", "BatchDLSupport", "BatchDLManifest", "BatchDLPlan", "TestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "TransferTests",
      dependencies: [
        "BatchDL", "BatchDLSupport", "BatchDLTransfer", "BatchDLManifest", "TestSupport",
        .product(name: "Crypto", package: "swift-crypto"),
      ],
      swiftSettings: strict
    ),
    .testTarget(
      name: "HTTPCacheTests",
      dependencies: ["BatchDL", "BatchDLTransfer", "BatchDLStore", "TestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "NetworkPolicyTests",
      dependencies: ["BatchDL", "BatchDLTransfer", "TestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "RunTests",
      dependencies: ["BatchDL", "BatchDLSupport", "BatchDLTransfer", "BatchDLPlan", "BatchDLStore", "TestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "EndToEndTests",
      dependencies: ["BatchDLSupport", "BatchDLTransfer", "BatchDLStore", "TestSupport", "TestServer"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "DecompressionTests",
      dependencies: ["BatchDLSupport", "TestSupport"],
      swiftSettings: strict
    ),
    .testTarget(
      name: "TestServerTests",
      dependencies: ["TestServer"],
      swiftSettings: strict
    ),
  ]
)

// The fuzz harness of the manifest layer exists only for scripts/fuzz, which sets BATCHDL_FUZZ and
// builds it with libFuzzer and AddressSanitizer; the normal build and test run never see it.
if ProcessInfo.processInfo.environment["BATCHDL_FUZZ"] != nil {
  package.products.append(.executable(name: "batchdl-fuzz", targets: ["batchdl-fuzz"]))
  package.targets.append(
    .executableTarget(
      name: "batchdl-fuzz",
      dependencies: ["BatchDL", "BatchDLManifest", "BatchDLPlan"],
      path: "fuzz/ManifestFuzz",
      swiftSettings: strict + [.unsafeFlags(["-parse-as-library"])]
    ))
}
