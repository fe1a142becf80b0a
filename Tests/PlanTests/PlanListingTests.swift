import Foundation
import TestSupport
import Testing

@testable import BatchDL
@testable import BatchDLPlan
@testable import BatchDLSupport

/// `batchdl plan` output: text for people, JSON for machines, never a secret.
@Suite struct PlanListingTests {
  static let yaml = """
    version: 1
    sessions:
      nightly:
        dest: mirror
        tasks:
          - download: https://example.org/releases/app.tar.gz
          - download: HTTPS://EXAMPLE.org:443/releases/app.tar.gz
            to: copy/app.tar.gz
          - download: https://example.org/releases/app.tar.gz
          - download: https://cdn.example.net/app.tar.gz.sig
            after: mirror/app.tar.gz
            priority: high
          - data: https://api.example.org/v1/releases.json
            id: releases
            priority: low
      other:
        kind: ephemeral
        tasks:
          - data: https://api.example.org/v1/status
    """

  @Test func textListing() throws {
    let planned = try planned(Self.yaml)
    let text = planned.text()
    let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    let header = try #require(lines.first)
    #expect(header.hasPrefix("plan for \(planned.folder.path)/manifest.yaml: "))
    #expect(header.hasSuffix(": 5 tasks → 4 requests, 1 shared by several tasks, 1 repeated task merged"))
    #expect(
      Array(lines.dropFirst()) == [
        "#1  GET https://example.org/releases/app.tar.gz  (session nightly)",
        "    download → mirror/app.tar.gz",
        "    download → mirror/copy/app.tar.gz",
        "#2  GET https://cdn.example.net/app.tar.gz.sig  (session nightly, high priority, after #1)",
        "    download → mirror/app.tar.gz.sig",
        "#3  GET https://api.example.org/v1/status  (session other)",
        "    data  [id https://api.example.org/v1/status]",
        "#4  GET https://api.example.org/v1/releases.json  (session nightly, low priority)",
        "    data  [id releases]",
        "",
      ])
  }

  @Test func textListingWithShards() throws {
    let planned = try planned(Self.yaml)
    let annotated = planned.text(shardCount: 3)
    for request in planned.plan.requests {
      let shard = planned.plan.shard(of: request, count: 3)
      #expect(annotated.contains("\(Redactor().url(planned.plan.url(of: request)))  (session"))
      #expect(annotated.contains("shard \(shard)/3"))
    }
    var shown = 0
    for index in 0..<3 {
      let text = planned.text(shard: Shard(index: index, count: 3))
      #expect(text.hasPrefix("plan for \(planned.folder.path)/manifest.yaml (shard \(index)/3): "))
      shown += text.split(separator: "\n").filter { $0.hasPrefix("#") }.count
    }
    #expect(shown == 4)
  }

  @Test func explicitIDsAreShownBesideTheDestination() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/x.bin
          id: fetch-x
        - download: https://example.org/y.bin
          id: y.bin
        """))
    let lines = planned.text().split(separator: "\n").map(String.init)
    #expect(lines.contains("    download → x.bin  [id fetch-x]"))
    #expect(lines.contains("    download → y.bin"))
  }

  @Test func emptyPlan() throws {
    let planned = try planned("version: 1\nsessions:\n  s:\n    tasks: []\n")
    #expect(planned.text().hasSuffix(": 0 tasks → 0 requests\n"))
    let object = try #require(try parseJSON(planned.json()) as? [String: Any])
    #expect((object["requests"] as? [Any])?.isEmpty == true)
    #expect((object["summary"] as? [String: Any])?["tasks"] as? Int == 0)
  }

  @Test func singularCounts() throws {
    let planned = try planned(manifest("- download: https://example.org/only.bin"))
    #expect(planned.text().split(separator: "\n").first?.hasSuffix(": 1 task → 1 request") == true)
  }

  @Test func jsonListing() throws {
    let planned = try planned(Self.yaml)
    let text = planned.json()
    #expect(text.hasSuffix("}\n"))
    let object = try #require(try parseJSON(text) as? [String: Any])
    #expect(Set(object.keys) == ["format", "manifest", "requests", "summary"])
    #expect(object["format"] as? String == "batchdl-plan/1")
    #expect(object["manifest"] as? String == planned.folder.path + "/manifest.yaml")

    let summary = try #require(object["summary"] as? [String: Any])
    #expect(Set(summary.keys) == ["tasks", "requests", "hosts", "sessions", "merged_duplicates"])
    #expect(summary["tasks"] as? Int == 5)
    #expect(summary["requests"] as? Int == 4)
    #expect(summary["hosts"] as? Int == 3)
    #expect(summary["sessions"] as? Int == 2)
    #expect(summary["merged_duplicates"] as? Int == 1)

    let requests = try #require(object["requests"] as? [[String: Any]])
    #expect(requests.count == 4)
    let keys: Set<String> = ["position", "key", "method", "url", "host", "session", "priority", "after", "tasks"]
    for request in requests { #expect(Set(request.keys) == keys) }
    #expect(requests.compactMap { $0["position"] as? Int } == [1, 2, 3, 4])
    // The signature waits for #1 and is high priority: it goes as soon as #1 is done.
    #expect(requests.compactMap { $0["priority"] as? String } == ["normal", "high", "normal", "low"])
    #expect(requests.compactMap { $0["session"] as? String } == ["nightly", "nightly", "other", "nightly"])
    #expect(
      requests.compactMap { $0["host"] as? String } == [
        "example.org", "cdn.example.net", "api.example.org", "api.example.org",
      ])
    #expect(requests.compactMap { $0["key"] as? String } == planned.ordered.map(\.key.description))
    #expect(requests[1]["after"] as? [Int] == [1])
    #expect(requests[0]["after"] as? [Int] == [])
    #expect(requests[0]["url"] as? String == "https://example.org/releases/app.tar.gz")
    #expect(requests[0]["method"] as? String == "GET")

    let shared = try #require(requests[0]["tasks"] as? [[String: Any]])
    #expect(shared.compactMap { $0["to"] as? String } == ["mirror/app.tar.gz", "mirror/copy/app.tar.gz"])
    #expect(shared.compactMap { $0["id"] as? String } == ["mirror/app.tar.gz", "mirror/copy/app.tar.gz"])
    #expect(shared.compactMap { $0["kind"] as? String } == ["download", "download"])
    let status = try #require((requests[2]["tasks"] as? [[String: Any]])?.first)
    #expect(Set(status.keys) == ["id", "kind"])
    #expect(status["id"] as? String == "https://api.example.org/v1/status")
  }

  @Test func jsonListingWithShards() throws {
    let planned = try planned(Self.yaml)
    let object = try #require(try parseJSON(planned.json(shardCount: 4)) as? [String: Any])
    let requests = try #require(object["requests"] as? [[String: Any]])
    #expect(requests.compactMap { $0["shard"] as? Int } == planned.ordered.map { planned.plan.shard(of: $0, count: 4) })
    let summary = try #require(object["summary"] as? [String: Any])
    #expect(summary["shard"] == nil)
  }

  @Test func jsonKeysAreSortedAndStable() throws {
    let first = try planned(Self.yaml)
    let second = try planned(Self.yaml)
    let a = first.json().replacingOccurrences(of: first.folder.path, with: "")
    let b = second.json().replacingOccurrences(of: second.folder.path, with: "")
    #expect(a == b)
    #expect(a.hasPrefix("{\"format\":\"batchdl-plan/1\",\"manifest\":\"/manifest.yaml\",\"requests\":[{\"after\":[],"))
  }

  @Test func jsonEscapesStrings() throws {
    let planned = try planned(
      manifest(
        """
        - download: https://example.org/a
          to: "quote\\"back\\\\slash é.bin"
        """))
    let object = try #require(try parseJSON(planned.json()) as? [String: Any])
    let requests = try #require(object["requests"] as? [[String: Any]])
    let task = try #require((requests.first?["tasks"] as? [[String: Any]])?.first)
    #expect(task["to"] as? String == "quote\"back\\slash é.bin")
  }

  // MARK: - Secrets

  static let secretYAML = """
    version: 1
    sessions:
      s:
        headers:
          Authorization: "Bearer ${TOKEN}"
        tasks:
          - download: https://user:${PASS}@example.org/private/a.bin
          - download: https://alice:hunter2pw@files.example.org/y.bin
          - download: https://example.org/api/b.bin?key=${KEY}
          - download: https://${SUB}.example.org/c.bin
          - data: https://example.org/api?token=${TOKEN}
          - data: https://bob:${PASS}@example.org/status
          - download: https://example.org/d.bin
            headers: {X-Api-Key: "${APIKEY}"}
            after: https://example.org/api?token=${TOKEN}
    """

  static let secrets = [
    "TOKEN": "tok-3x4mpl3-s3cr3t", "PASS": "pa55w0rd-xyz", "KEY": "k3y|with|pipes", "SUB": "s3cretsub",
    "APIKEY": "apikey-0123456789",
  ]

  static let leaks = [
    "tok-3x4mpl3-s3cr3t", "pa55w0rd-xyz", "hunter2pw", "k3y|with|pipes", "k3y%7Cwith%7Cpipes", "s3cretsub",
    "apikey-0123456789", "alice", "bob:",
  ]

  @Test func secretsNeverAppearInText() throws {
    let planned = try planned(Self.secretYAML, environment: Self.secrets)
    for text in [planned.text(), planned.text(shardCount: 2)] {
      for leak in Self.leaks {
        #expect(!text.contains(leak), "'\(leak)' leaked into:\n\(text)")
      }
      #expect(text.contains("https://<redacted>@example.org/private/a.bin"))
      #expect(text.contains("https://<redacted>@files.example.org/y.bin"))
      #expect(text.contains("[id https://example.org/api?token=${TOKEN}]"))
    }
  }

  @Test func secretsNeverAppearInJSON() throws {
    let planned = try planned(Self.secretYAML, environment: Self.secrets)
    let text = planned.json(shardCount: 3)
    for leak in Self.leaks {
      #expect(!text.contains(leak), "'\(leak)' leaked into:\n\(text)")
    }
    let object = try #require(try parseJSON(text) as? [String: Any])
    let requests = try #require(object["requests"] as? [[String: Any]])
    let urls = requests.compactMap { $0["url"] as? String }
    #expect(urls.contains("https://<redacted>@example.org/private/a.bin"))
    #expect(urls.contains("https://<redacted>@files.example.org/y.bin"))
    #expect(urls.contains("https://example.org/api?token=${TOKEN}"))
    #expect(urls.contains("https://<redacted>@example.org/status"))
    let ids = requests.flatMap { ($0["tasks"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String } }
    #expect(ids.contains("https://<redacted>@example.org/status"))
  }

  @Test func secretsAreStillPartOfTheRequest() throws {
    // Redaction is for output only: two tokens are two requests.
    let one = try planned(Self.secretYAML, environment: Self.secrets)
    var other = Self.secrets
    other["TOKEN"] = "another-token-value"
    let two = try planned(Self.secretYAML, environment: other)
    #expect(one.plan.requests.count == two.plan.requests.count)
    #expect(Set(one.plan.requests.map(\.key)).isDisjoint(with: two.plan.requests.map(\.key)))
    #expect(one.plan.url(of: one.plan.requests[0]) == "https://user:pa55w0rd-xyz@example.org/private/a.bin")
  }

  @Test func secretsNeverAppearInDiagnostics() {
    let found = problems(
      """
      version: 1
      sessions:
        s:
          tasks:
            - download: ${MIRROR}/file.bin
            - download: https://example.org/x
              after: ${MIRROR}
      """,
      environment: ["MIRROR": "mirror-secret-host"])
    #expect(found.count == 2)
    for line in found {
      #expect(!line.contains("mirror-secret-host"), "\(line)")
    }
    #expect(found.first?.contains("'${MIRROR}/file.bin' is not a URL") == true, "\(found)")
  }
}
