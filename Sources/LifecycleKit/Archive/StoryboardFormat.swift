//
// This source file is part of LifecycleKit
// Copyright (c) 2026 the LifecycleKit authors
//
// See LICENSE.txt for license information
// SPDX-License-Identifier: Apache-2.0
//

/// The storyboard format: a controller tree written by hand, with comments.
///
/// ```
/// # The demo's tree (comments start with # or //).
/// DemoRootController root {
///     restorationIdentifier = root
///     view LabelView title { text = "lifecycled" }
///     WorkerController worker { restorationIdentifier = worker }
///     ModesController modes {
///         restorationIdentifier = modes
///         ModeController serving { restorationIdentifier = serving }
///     }
///     present ViewController settings { modalPresentationStyle = overCurrentContext }
/// }
/// ```
///
/// - A controller is its registered class, then (on the same line) its name in trace paths, then an optional block.
/// - In a block: `key = value` properties (read by the class's `init(coder:)`; `restorationIdentifier` and
///   `modalPresentationStyle` are the controller's own), child controllers (a navigation controller's children are
///   its stack, bottom first), `view Class name { … }` views under the controller's root view (properties and
///   subviews), and `present Class name { … }` for the controller it presents.
/// - A value is a word (`5`, `yes`, `fullScreen`, `/var/lib/x`) or a "quoted string" (`\"`, `\\`, `\n`, `\t`,
///   `\u{1F600}`). Line breaks and `;` between members are optional.
///
/// ``parse(_:source:)`` is a pure function from text to an archive whose nodes know where they were written, or an
/// ``ArchiveError`` naming `file:line:column` and what would be valid there.
@_spi(Internal) public enum StoryboardFormat {
    /// How deep controllers and views may nest.
    @_spi(Internal) public static let maximumDepth = 64

    /// Parses storyboard text; `source` names the file in errors.
    @_spi(Internal) public static func parse(_ text: String, source: String) throws(ArchiveError) -> Archive {
        var parser = StoryboardParser(text: text, source: source)
        return Archive(root: try parser.parseStoryboard(), sourceName: source)
    }
}

private struct StoryboardToken: Equatable {
    enum Kind: Equatable {
        case word(String)
        case string(String)
        case openBrace, closeBrace, equals, semicolon
        case end
    }

    var kind: Kind
    var location: SourceLocation

    var shown: String {
        switch kind {
        case .word(let word): "\"\(word)\""
        case .string(let text): "the string \(text.debugDescription)"
        case .openBrace: "\"{\""
        case .closeBrace: "\"}\""
        case .equals: "\"=\""
        case .semicolon: "\";\""
        case .end: "the end of the file"
        }
    }
}

private struct StoryboardParser {
    let source: String
    private let characters: [Character]
    private var index = 0
    private var line = 1
    private var column = 1
    /// Tokens read ahead, next first.
    private var pending: [StoryboardToken] = []

    init(text: String, source: String) {
        self.source = source
        self.characters = Array(text)
    }

    private func error(_ message: String, at location: SourceLocation) -> ArchiveError {
        ArchiveError(source: source, reason: message, location: location)
    }

    // MARK: Lexer

    private mutating func advance() {
        if characters[index].isNewline {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    private static func isWordCharacter(_ character: Character) -> Bool {
        !character.isWhitespace && !"{}=;\"#".contains(character)
    }

    private mutating func skipTrivia() {
        while index < characters.count {
            let character = characters[index]
            if character.isWhitespace {
                advance()
            } else if character == "#" || (character == "/" && index + 1 < characters.count && characters[index + 1] == "/") {
                while index < characters.count, !characters[index].isNewline { advance() }
            } else {
                return
            }
        }
    }

    private mutating func lex() throws(ArchiveError) -> StoryboardToken {
        skipTrivia()
        let start = SourceLocation(line: line, column: column)
        guard index < characters.count else { return StoryboardToken(kind: .end, location: start) }
        let character = characters[index]
        switch character {
        case "{":
            advance()
            return StoryboardToken(kind: .openBrace, location: start)
        case "}":
            advance()
            return StoryboardToken(kind: .closeBrace, location: start)
        case "=":
            advance()
            return StoryboardToken(kind: .equals, location: start)
        case ";":
            advance()
            return StoryboardToken(kind: .semicolon, location: start)
        case "\"":
            return StoryboardToken(kind: .string(try lexString(start: start)), location: start)
        default:
            var word = ""
            while index < characters.count, Self.isWordCharacter(characters[index]) {
                // `//` starts a comment even right after a word.
                if characters[index] == "/", index + 1 < characters.count, characters[index + 1] == "/" { break }
                word.append(characters[index])
                advance()
            }
            return StoryboardToken(kind: .word(word), location: start)
        }
    }

    private mutating func lexString(start: SourceLocation) throws(ArchiveError) -> String {
        advance()
        var text = ""
        while true {
            guard index < characters.count, !characters[index].isNewline else {
                throw error("the string that starts here is not closed: add a \" before the end of the line", at: start)
            }
            let character = characters[index]
            if character == "\"" {
                advance()
                return text
            }
            if character == "\\" {
                let escapeLocation = SourceLocation(line: line, column: column)
                advance()
                guard index < characters.count else {
                    throw error("the string that starts here is not closed: add a \" before the end of the file", at: start)
                }
                let escaped = characters[index]
                advance()
                switch escaped {
                case "\"": text.append("\"")
                case "\\": text.append("\\")
                case "n": text.append("\n")
                case "t": text.append("\t")
                case "u":
                    text.append(try lexUnicodeEscape(at: escapeLocation))
                default:
                    throw error(
                        "\\\(escaped) is not an escape; valid: \\\", \\\\, \\n, \\t, \\u{hex}",
                        at: escapeLocation
                    )
                }
                continue
            }
            text.append(character)
            advance()
        }
    }

    private mutating func lexUnicodeEscape(at location: SourceLocation) throws(ArchiveError) -> Character {
        let invalid = error("a \\u escape is \\u{ followed by 1 to 8 hex digits and }, naming a Unicode scalar", at: location)
        guard index < characters.count, characters[index] == "{" else { throw invalid }
        advance()
        var digits = ""
        while index < characters.count, characters[index] != "}", digits.count <= 8 {
            digits.append(characters[index])
            advance()
        }
        guard index < characters.count, characters[index] == "}", (1...8).contains(digits.count),
            let value = UInt32(digits, radix: 16), let scalar = Unicode.Scalar(value)
        else { throw invalid }
        advance()
        return Character(scalar)
    }

    private mutating func peek() throws(ArchiveError) -> StoryboardToken {
        if let first = pending.first { return first }
        let token = try lex()
        pending.append(token)
        return token
    }

    private mutating func next() throws(ArchiveError) -> StoryboardToken {
        let token = try peek()
        pending.removeFirst()
        return token
    }

    private mutating func pushBack(_ token: StoryboardToken) {
        pending.insert(token, at: 0)
    }

    private mutating func skipSemicolons() throws(ArchiveError) {
        while case .semicolon = try peek().kind { _ = try next() }
    }

    // MARK: Grammar

    private static let memberHelp =
        "a property (key = value), a child controller (Class name { … }), view Class name { … }, present Class name { … }"

    mutating func parseStoryboard() throws(ArchiveError) -> Archive.Node {
        try skipSemicolons()
        let first = try peek()
        guard case .word = first.kind else {
            if first.kind == .end {
                throw error("the storyboard is empty: expected its root controller (Class name { … })", at: first.location)
            }
            throw error("expected the root controller (Class name { … }); found \(first.shown)", at: first.location)
        }
        let root = try parseController(depth: 1)
        try skipSemicolons()
        let after = try peek()
        guard after.kind == .end else {
            if after.kind == .closeBrace {
                throw error("unexpected \"}\": no block is open here", at: after.location)
            }
            throw error(
                "a storyboard has one root controller (\(root.identifier ?? root.className)); found \(after.shown) after it",
                at: after.location
            )
        }
        return root
    }

    private mutating func className(_ token: StoryboardToken, what: String) throws(ArchiveError) -> String {
        guard case .word(let word) = token.kind else {
            throw error("expected \(what) class name; found \(token.shown)", at: token.location)
        }
        guard let first = word.first, first.isLetter || first == "_",
            word.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." })
        else {
            throw error("\"\(word)\" is not a class name (a letter, then letters, digits, _ or .)", at: token.location)
        }
        return word
    }

    /// The name that follows a class on the same line, if any.
    private mutating func optionalName(after classToken: StoryboardToken) throws(ArchiveError) -> String? {
        let token = try peek()
        guard case .word(let word) = token.kind, token.location.line == classToken.location.line else { return nil }
        // `Class key = …` is not a name: it is a property of the enclosing block on the same line; leave it.
        _ = try next()
        if case .equals = try peek().kind {
            throw error(
                "\"\(word)\" follows a class on its line and is followed by \"=\": put the property on its own line or "
                    + "inside the class's { … }",
                at: token.location
            )
        }
        try checkName(word, at: token.location)
        return word
    }

    private func checkName(_ name: String, at location: SourceLocation) throws(ArchiveError) {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw error("\"\(name)\" is not a name (letters, digits, - and _; no / or .)", at: location)
        }
    }

    private mutating func parseController(depth: Int) throws(ArchiveError) -> Archive.Node {
        let classToken = try next()
        if depth > StoryboardFormat.maximumDepth {
            throw error("controllers nest deeper than \(StoryboardFormat.maximumDepth) levels here", at: classToken.location)
        }
        var node = Archive.Node(className: try className(classToken, what: "a controller"))
        node.origin.location = classToken.location
        node.identifier = try optionalName(after: classToken)
        guard case .openBrace = try peek().kind else { return node }
        let open = try next()
        let label = node.identifier ?? node.className
        var childNames: [String: SourceLocation] = [:]
        var viewNames: [String: SourceLocation] = [:]
        while true {
            try skipSemicolons()
            let token = try peek()
            switch token.kind {
            case .closeBrace:
                _ = try next()
                return node
            case .end:
                throw error(
                    "the block of \(label) opened at \(open.location) is not closed: expected \"}\" before the end of the file",
                    at: token.location
                )
            case .word(let word):
                _ = try next()
                if case .equals = try peek().kind {
                    let (value, location) = try parseValue(key: word, keyToken: token)
                    try setControllerProperty(&node, key: word, value: value, keyToken: token, valueLocation: location)
                } else if word == "view" {
                    let view = try parseView(depth: depth + 1)
                    let name = view.name ?? view.className
                    if let first = viewNames[name] {
                        throw error("two views under \(label) are named \(name) (the first at \(first)); give each its own name", at: view.origin.location ?? token.location)
                    }
                    viewNames[name] = view.origin.location
                    node.views.append(view)
                } else if word == "present" {
                    if let presented = node.presented {
                        throw error(
                            "\(label) already presents \(presented.identifier ?? presented.className) (at \(presented.origin.location ?? token.location)); a controller presents one",
                            at: token.location
                        )
                    }
                    guard case .word = try peek().kind else {
                        throw error("expected the presented controller (Class name { … }) after present; found \(try peek().shown)", at: try peek().location)
                    }
                    let presented = try parseController(depth: depth + 1)
                    try checkUnique(presented, in: &childNames, under: label)
                    node.presented = presented
                } else {
                    pushBack(token)
                    let child = try parseController(depth: depth + 1)
                    try checkUnique(child, in: &childNames, under: label)
                    node.children.append(child)
                }
            default:
                throw error("expected \(Self.memberHelp), or \"}\" closing \(label) (opened at \(open.location)); found \(token.shown)", at: token.location)
            }
        }
    }

    private func checkUnique(_ child: Archive.Node, in names: inout [String: SourceLocation], under label: String) throws(ArchiveError) {
        // Unnamed controllers are named after their class when instantiated; only explicit names are compared here.
        guard let name = child.identifier, let location = child.origin.location else { return }
        if let first = names[name] {
            throw error("two controllers under \(label) are named \(name) (the first at \(first)); give each its own name", at: location)
        }
        names[name] = location
    }

    private mutating func parseValue(key: String, keyToken: StoryboardToken) throws(ArchiveError) -> (String, SourceLocation) {
        _ = try next()  // =
        let token = try next()
        switch token.kind {
        case .word(let word) where token.location.line == keyToken.location.line:
            return (word, token.location)
        case .string(let text) where token.location.line == keyToken.location.line:
            return (text, token.location)
        default:
            throw error(
                "expected a value after \"\(key) =\" on the same line: a word or a \"quoted string\"; found \(token.shown)",
                at: token.location
            )
        }
    }

    private func setControllerProperty(
        _ node: inout Archive.Node,
        key: String,
        value: String,
        keyToken: StoryboardToken,
        valueLocation: SourceLocation
    ) throws(ArchiveError) {
        let label = node.identifier ?? node.className
        if let first = node.origin.propertyLocations[key] {
            throw error("\(key) is set twice in \(label) (first at \(first))", at: keyToken.location)
        }
        try checkKey(key, at: keyToken.location)
        node.origin.propertyLocations[key] = valueLocation
        switch key {
        case "restorationIdentifier":
            try checkName(value, at: valueLocation)
            node.restorationIdentifier = value
        case "modalPresentationStyle":
            guard let style = ModalPresentationStyle(rawValue: value) else {
                throw error(
                    "modalPresentationStyle = \(value) is not a presentation style; valid: "
                        + ModalPresentationStyle.allCases.map(\.rawValue).joined(separator: ", "),
                    at: valueLocation
                )
            }
            node.modalPresentationStyle = style
        default:
            node.properties[key] = value
        }
    }

    private func checkKey(_ key: String, at location: SourceLocation) throws(ArchiveError) {
        guard let first = key.first, first.isLetter || first == "_",
            key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
        else {
            throw error("\"\(key)\" is not a property name (a letter, then letters, digits, - or _)", at: location)
        }
    }

    private mutating func parseView(depth: Int) throws(ArchiveError) -> Archive.ViewNode {
        let classToken = try next()
        if depth > StoryboardFormat.maximumDepth {
            throw error("views nest deeper than \(StoryboardFormat.maximumDepth) levels here", at: classToken.location)
        }
        var view = Archive.ViewNode(className: try className(classToken, what: "after view, a view"))
        view.origin.location = classToken.location
        view.name = try optionalName(after: classToken)
        guard case .openBrace = try peek().kind else { return view }
        let open = try next()
        let label = view.name ?? view.className
        var subviewNames: [String: SourceLocation] = [:]
        while true {
            try skipSemicolons()
            let token = try next()
            switch token.kind {
            case .closeBrace:
                return view
            case .end:
                throw error(
                    "the block of view \(label) opened at \(open.location) is not closed: expected \"}\" before the end of the file",
                    at: token.location
                )
            case .word(let word):
                if case .equals = try peek().kind {
                    let (value, location) = try parseValue(key: word, keyToken: token)
                    if let first = view.origin.propertyLocations[word] {
                        throw error("\(word) is set twice in view \(label) (first at \(first))", at: token.location)
                    }
                    try checkKey(word, at: token.location)
                    view.origin.propertyLocations[word] = location
                    view.properties[word] = value
                } else if word == "view" {
                    let subview = try parseView(depth: depth + 1)
                    let name = subview.name ?? subview.className
                    if let first = subviewNames[name] {
                        throw error("two views under \(label) are named \(name) (the first at \(first)); give each its own name", at: subview.origin.location ?? token.location)
                    }
                    subviewNames[name] = subview.origin.location
                    view.subviews.append(subview)
                } else {
                    throw error(
                        "expected a property (key = value), a subview (view Class name { … }) or \"}\" closing view \(label) (opened at \(open.location)); found \(token.shown) (a view holds no controllers)",
                        at: token.location
                    )
                }
            default:
                throw error(
                    "expected a property (key = value), a subview (view Class name { … }) or \"}\" closing view \(label) (opened at \(open.location)); found \(token.shown)",
                    at: token.location
                )
            }
        }
    }
}
