/// A value that came from `${NAME}` in a place where it may be a credential.
public struct Secret: Hashable, Sendable {
  public var name: String
  public var value: String

  package init(name: String, value: String) {
    self.name = name
    self.value = value
  }
}
