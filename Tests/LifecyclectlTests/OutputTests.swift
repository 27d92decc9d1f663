import LifecycleSystemd
import Testing

@testable import lifecyclectl

@Suite struct OutputTests {
    @Test func placeholder() {}
}
