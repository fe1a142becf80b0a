import Foundation
import Testing

@testable import BatchDL
@testable import BatchDLTransfer

@Suite struct ClassificationTests {
  @Test func globsMatchLikeFnmatch() {
    #expect(InterfaceClassifier.matches("wwan0", pattern: "wwan*"))
    #expect(InterfaceClassifier.matches("wwan", pattern: "wwan*"))
    #expect(!InterfaceClassifier.matches("xwwan0", pattern: "wwan*"))
    #expect(InterfaceClassifier.matches("ppp1", pattern: "ppp?"))
    #expect(!InterfaceClassifier.matches("ppp10", pattern: "ppp?"))
    #expect(InterfaceClassifier.matches("eth0", pattern: "eth0"))
    #expect(!InterfaceClassifier.matches("eth01", pattern: "eth0"))
    #expect(InterfaceClassifier.matches("usb3", pattern: "usb[0-9]"))
    #expect(!InterfaceClassifier.matches("eth0", pattern: ""))
  }

  @Test func theDefaultPatternsNameModemsCellular() {
    let classifier = InterfaceClassifier(settings: settings(), environment: [:])
    for name in ["wwan0", "ppp0", "rmnet_data0", "wwp0s20f0u6"] { #expect(classifier.classify(name).cellular) }
    for name in ["eth0", "wlan0", "lo", "enp3s0"] { #expect(classifier.classify(name) == InterfaceClass()) }
  }

  @Test func cellularCountsAsExpensive() {
    let classifier = InterfaceClassifier(
      settings: settings(expensiveInterfaces: ["tether*"], constrainedInterfaces: ["wwan1"]), environment: [:])
    #expect(classifier.classify("wwan0") == InterfaceClass(cellular: true, expensive: true, constrained: false))
    #expect(classifier.classify("wwan1") == InterfaceClass(cellular: true, expensive: true, constrained: true))
    #expect(classifier.classify("tether0") == InterfaceClass(cellular: false, expensive: true, constrained: false))
    #expect(InterfaceClass(cellular: true).expensive)
  }

  @Test func environmentPatternsAddToTheManifests() {
    let environment = [
      "BATCHDL_CELLULAR_INTERFACES": "lo, usb* ,,",
      "BATCHDL_EXPENSIVE_INTERFACES": "eth1",
      "BATCHDL_CONSTRAINED_INTERFACES": "wlan*",
    ]
    let classifier = InterfaceClassifier(settings: settings(), environment: environment)
    #expect(classifier.cellularPatterns == ["wwan*", "ppp*", "rmnet*", "wwp*", "lo", "usb*"])
    #expect(classifier.classify("lo").cellular)
    #expect(classifier.classify("usb0").cellular)
    #expect(classifier.classify("wwan0").cellular)
    #expect(classifier.classify("eth1") == InterfaceClass(expensive: true))
    #expect(classifier.classify("wlan0") == InterfaceClass(constrained: true))
    #expect(InterfaceClassifier(settings: settings(), environment: [:]).classify("lo") == InterfaceClass())
    let policy = NetworkPolicy(routes: finder(ipv4: ""), environment: environment)
    #expect(policy.classifier(for: settings()) == classifier)
  }

  @Test func theMachineListsLoopbackWithItsAddress() throws {
    let interfaces = NetworkInterface.current()
    let loopback = try #require(interfaces.first { $0.isLoopback })
    #expect(loopback.name == "lo")
    #expect(loopback.addresses.contains(try address("127.0.0.1")))
    #expect(interfaces.allSatisfy { !$0.addresses.isEmpty })
  }
}
