import Testing

@testable import BeaconProtocol

/// Parses `text` as a schema.
private func schema(_ text: String) throws -> JSONSchema {
    try JSONSchema(JSONValue(parsing: text))
}

/// The violation of `valueText` against `schemaText`.
private func violation(_ schemaText: String, _ valueText: String) throws -> String? {
    try schema(schemaText).violation(of: JSONValue(parsing: valueText))
}

@Suite("JSON schemas")
struct JSONSchemaTests {
    @Test(
        arguments: [
            (#"{"type": "null"}"#, "null", nil),
            (#"{"type": "null"}"#, "0", "expected null, got integer"),
            (#"{"type": "boolean"}"#, "false", nil),
            (#"{"type": "boolean"}"#, "\"true\"", "expected boolean, got string"),
            (#"{"type": "integer"}"#, "12", nil),
            (#"{"type": "integer"}"#, "12.0", nil),
            (#"{"type": "integer"}"#, "-3e2", nil),
            (#"{"type": "integer"}"#, "12.5", "expected integer, got number"),
            (#"{"type": "integer"}"#, "\"12\"", "expected integer, got string"),
            (#"{"type": "number"}"#, "12", nil),
            (#"{"type": "number"}"#, "12.5", nil),
            (#"{"type": "number"}"#, "true", "expected number, got boolean"),
            (#"{"type": "string"}"#, "\"\"", nil),
            (#"{"type": "string"}"#, "null", "expected string, got null"),
            (#"{"type": "array"}"#, "[]", nil),
            (#"{"type": "array"}"#, "{}", "expected array, got object"),
            (#"{"type": "object"}"#, "{}", nil),
            (#"{"type": "object"}"#, "[]", "expected object, got array"),
            (#"{"type": ["integer", "null"]}"#, "null", nil),
            (#"{"type": ["integer", "null"]}"#, "7", nil),
            (#"{"type": ["null", "integer"]}"#, "\"x\"", "expected integer or null, got string"),
            ("{}", #"{"any": [1, null]}"#, nil),
        ] as [(String, String, String?)])
    func types(schemaText: String, valueText: String, expected: String?) throws {
        #expect(try violation(schemaText, valueText) == expected)
    }

    @Test func enumComparesNumbersByValue() throws {
        let choices = try schema(#"{"enum": [1, 2, "three"]}"#)
        #expect(choices.violation(of: 1) == nil)
        #expect(choices.violation(of: .double(1)) == nil)
        #expect(choices.violation(of: "three") == nil)
        #expect(choices.violation(of: 3) == #"expected one of 1, 2, "three""#)
        #expect(choices.violation(of: 1.5) == #"expected one of 1, 2, "three""#)
        #expect(choices.violation(of: "1") == #"expected one of 1, 2, "three""#)

        let doubles = try schema(#"{"enum": [1.0, [2.0], {"a": 3.0}]}"#)
        #expect(doubles.violation(of: 1) == nil)
        #expect(doubles.violation(of: [2]) == nil)
        #expect(doubles.violation(of: ["a": 3]) == nil)
        #expect(doubles.violation(of: [2, 2]) != nil)
        #expect(doubles.violation(of: ["a": 3, "b": 3]) != nil)

        // Integers beyond 2^53 are not rounded to the nearest double before comparing.
        let large = try schema(#"{"enum": [9007199254740993]}"#)
        #expect(large.violation(of: .int(9_007_199_254_740_993)) == nil)
        #expect(large.violation(of: .double(9_007_199_254_740_992)) != nil)

        let many = try schema(#"{"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}"#)
        #expect(many.violation(of: 0)?.contains("… (10 values)") == true)
    }

    @Test func const() throws {
        let fixed = try schema(#"{"const": {"a": 1}}"#)
        #expect(fixed.violation(of: ["a": 1]) == nil)
        #expect(fixed.violation(of: ["a": .double(1)]) == nil)
        #expect(fixed.violation(of: ["a": 2]) == #"expected {"a":1}"#)
        #expect(try schema(#"{"const": 2, "enum": [1, 2.0]}"#).violation(of: 2) == nil)
        let null = try schema(#"{"const": null}"#)
        #expect(null.violation(of: nil) == nil)
        #expect(null.violation(of: 0) == "expected null")
        #expect(null.typeSummary == "exactly null")
        #expect(throws: JSONSchemaError(path: "const", reason: "the value is not among the enum values")) {
            try schema(#"{"const": 3, "enum": [1, 2]}"#)
        }
    }

    @Test(
        arguments: [
            (#"{"type": "integer", "minimum": 6, "maximum": 72}"#, "6", nil),
            (#"{"type": "integer", "minimum": 6, "maximum": 72}"#, "72", nil),
            (#"{"type": "integer", "minimum": 6, "maximum": 72}"#, "5", "5 is below the minimum 6"),
            (#"{"type": "integer", "minimum": 6, "maximum": 72}"#, "80", "80 is above the maximum 72"),
            (#"{"minimum": 0.5}"#, "0", "0 is below the minimum 0.5"),
            (#"{"minimum": 0.5}"#, "0.5", nil),
            (#"{"maximum": 1.5}"#, "1.75", "1.75 is above the maximum 1.5"),
            (#"{"exclusiveMinimum": 0}"#, "0", "0 is not above the exclusive minimum 0"),
            (#"{"exclusiveMinimum": 0}"#, "0.001", nil),
            (#"{"exclusiveMaximum": 1}"#, "1.0", "1.0 is not below the exclusive maximum 1"),
            (#"{"exclusiveMaximum": 1}"#, "0.999", nil),
            (#"{"maximum": 9007199254740993}"#, "9007199254740993", nil),
            (#"{"maximum": 9007199254740993}"#, "9007199254740994", "9007199254740994 is above the maximum"),
            (#"{"maximum": 9007199254740992.0}"#, "9007199254740993", "9007199254740993 is above the maximum"),
            (#"{"minimum": -9223372036854775808}"#, "-9223372036854775808", nil),
            (#"{"minimum": -1e300}"#, "-9223372036854775808", nil),
            (#"{"maximum": 1e300}"#, "9223372036854775807", nil),
            // A number keyword says nothing about other types, unless `type` rules them out.
            (#"{"minimum": 6}"#, "\"a\"", nil),
            (#"{"minimum": 6}"#, "null", nil),
            (#"{"type": "integer", "minimum": 6}"#, "\"a\"", "expected integer, got string"),
        ] as [(String, String, String?)])
    func numberBounds(schemaText: String, valueText: String, expected: String?) throws {
        let result = try violation(schemaText, valueText)
        if let expected {
            #expect(result?.hasPrefix(expected) == true, "\(result ?? "nil")")
        } else {
            #expect(result == nil)
        }
    }

    @Test func stringLengthsCountUnicodeScalars() throws {
        let bounded = try schema(#"{"minLength": 2, "maxLength": 3}"#)
        #expect(bounded.violation(of: "ab") == nil)
        #expect(bounded.violation(of: "abc") == nil)
        #expect(bounded.violation(of: "a") == "expected at least 2 characters, got 1")
        #expect(bounded.violation(of: "abcd") == "expected at most 3 characters, got 4")
        // Two scalars (e and a combining acute accent) in one Character; one scalar of four UTF-8 bytes.
        #expect(bounded.violation(of: "e\u{301}") == nil)
        #expect(bounded.violation(of: "😀") == "expected at least 2 characters, got 1")
        #expect(bounded.violation(of: "😀😀😀") == nil)
        #expect(bounded.violation(of: 1) == nil)
        #expect(try schema(#"{"maxLength": 1}"#).violation(of: "ab") == "expected at most 1 character, got 2")
    }

    @Test func arrays() throws {
        let strings = try schema(#"{"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}"#)
        #expect(strings.violation(of: ["a"]) == nil)
        #expect(strings.violation(of: ["a", "b", nil]) == "at [2]: expected string, got null")
        #expect(strings.violation(of: []) == "expected at least 1 item, got 0")
        #expect(strings.violation(of: ["a", "b", "c", "d"]) == "expected at most 3 items, got 4")
        // The first failing element is reported.
        #expect(strings.violation(of: [1, nil]) == "at [0]: expected string, got integer")

        let grid = try schema(#"{"items": {"items": {"type": "integer", "maximum": 9}}}"#)
        #expect(grid.violation(of: [[1, 2], [3, 10]]) == "at [1][1]: 10 is above the maximum 9")
        #expect(grid.violation(of: "not an array") == nil)
    }

    @Test func objects() throws {
        let window = try schema(
            #"""
            {"type": "object", "required": ["name"],
             "properties": {"name": {"type": "string"}, "size": {"type": "integer", "maximum": 72},
                            "frame": {"type": "object", "properties": {"origin": {"items": {"type": "number"}}}}},
             "additionalProperties": false}
            """#)
        #expect(window.violation(of: ["name": "main", "size": 12]) == nil)
        #expect(window.violation(of: ["size": 12]) == #"missing required property "name""#)
        #expect(window.violation(of: ["name": "main", "size": 80]) == "at .size: 80 is above the maximum 72")
        #expect(window.violation(of: ["name": 1]) == "at .name: expected string, got integer")
        #expect(
            window.violation(of: ["name": "main", "frame": ["origin": [0, "x"]]])
                == "at .frame.origin[1]: expected number, got string")
        #expect(window.violation(of: ["name": "main", "extra": 1]) == "at .extra: property not allowed")
        // Of several undeclared members, the one with the least name, whatever the dictionary's order.
        #expect(window.violation(of: ["name": "main", "zz": 1, "b": 1, "c": 1]) == "at .b: property not allowed")

        let open = try schema(#"{"properties": {"a": {"type": "integer"}}}"#)
        #expect(open.violation(of: ["a": 1, "b": "anything"]) == nil)

        let counters = try schema(#"{"additionalProperties": {"type": "integer"}, "properties": {"label": {}}}"#)
        #expect(counters.violation(of: ["label": "x", "a": 1, "b": 2]) == nil)
        #expect(
            counters.violation(of: ["label": "x", "a": 1, "b": "2", "c": "3"]) == "at .b: expected integer, got string")

        // Names that are not plain identifiers are shown as JSON strings.
        let odd = try schema(#"{"properties": {"a b": {"properties": {"": {"type": "null"}}}}}"#)
        #expect(odd.violation(of: ["a b": ["": 1]]) == #"at ["a b"][""]: expected null, got integer"#)

        let nested = try schema(#"{"properties": {"inner": {"required": ["id"]}}}"#)
        #expect(nested.violation(of: ["inner": [:]]) == #"at .inner: missing required property "id""#)
        #expect(nested.violation(of: ["inner": 1]) == nil)
    }

    @Test(arguments: [
        (#"[]"#, "expected a schema object"),
        (#"true"#, "expected a schema object"),
        (#"{"type": "float"}"#, #"type: unknown type "float""#),
        (#"{"type": []}"#, "type: expected a type name or a non-empty array of them"),
        (#"{"type": ["string", 1]}"#, "type: expected a type name"),
        (#"{"type": ["string", "string"]}"#, #"type: type "string" is listed twice"#),
        (#"{"enum": []}"#, "enum: expected a non-empty array"),
        (#"{"enum": 1}"#, "enum: expected a non-empty array"),
        (#"{"minimum": "6"}"#, "minimum: expected a number"),
        (#"{"maximum": null}"#, "maximum: expected a number"),
        (#"{"exclusiveMinimum": true}"#, "exclusiveMinimum: expected a number"),
        (#"{"exclusiveMaximum": [1]}"#, "exclusiveMaximum: expected a number"),
        (#"{"minLength": -1}"#, "minLength: expected a non-negative integer"),
        (#"{"maxLength": 1.5}"#, "maxLength: expected a non-negative integer"),
        (#"{"minItems": "1"}"#, "minItems: expected a non-negative integer"),
        (#"{"maxItems": -0.5}"#, "maxItems: expected a non-negative integer"),
        (#"{"items": [{}]}"#, "items: expected a schema object"),
        (#"{"items": {"minimum": "x"}}"#, "items.minimum: expected a number"),
        (#"{"properties": []}"#, "properties: expected an object of schemas"),
        (#"{"properties": {"size": {"minimum": "x"}}}"#, "properties.size.minimum: expected a number"),
        (#"{"properties": {"size": 5}}"#, "properties.size: expected a schema object"),
        (#"{"required": "name"}"#, "required: expected an array of strings"),
        (#"{"required": ["name", 1]}"#, "required: expected an array of strings"),
        (#"{"additionalProperties": 1}"#, "additionalProperties: expected a boolean or a schema object"),
        (#"{"additionalProperties": {"type": "x"}}"#, #"additionalProperties.type: unknown type "x""#),
        (#"{"format": "email"}"#, #"unsupported keyword "format""#),
        (#"{"readOnly": true}"#, #"unsupported keyword "readOnly""#),
        (##"{"items": {"$ref": "#"}}"##, #"items: unsupported keyword "$ref""#),
        (#"{"properties": {"a": {"oneOf": []}}}"#, #"properties.a: unsupported keyword "oneOf""#),
    ])
    func invalidSchemas(schemaText: String, expectedPrefix: String) throws {
        let value = try JSONValue(parsing: schemaText)
        #expect {
            try JSONSchema(value)
        } throws: { error in
            let description = (error as? JSONSchemaError)?.description ?? ""
            return description.hasPrefix(expectedPrefix)
        }
    }

    @Test func errorsNameThePathApart() throws {
        let value = try JSONValue(parsing: #"{"properties": {"size": {"minimum": "x"}}}"#)
        #expect(throws: JSONSchemaError(path: "properties.size.minimum", reason: "expected a number")) {
            try JSONSchema(value)
        }
        #expect(JSONSchemaError(path: "", reason: "expected a schema object").description == "expected a schema object")
    }

    @Test func annotationsAreAcceptedAndIgnored() throws {
        let annotated = try schema(
            #"{"title": "T", "$comment": "c", "$schema": "https://json-schema.org/draft/2020-12/schema", "examples": [1]}"#
        )
        #expect(annotated.violation(of: "anything") == nil)
        #expect(annotated.typeSummary == "any")
        // Nested schemas often describe their members; those annotations are no error either.
        let nested = try schema(
            #"{"type": "object", "properties": {"size": {"type": "integer", "description": "d", "default": 3}}}"#)
        #expect(nested.violation(of: ["size": 4]) == nil)
        #expect(nested.violation(of: ["size": "4"]) != nil)
    }

    @Test(arguments: [
        (#"{"type": "integer", "minimum": 6, "maximum": 72}"#, "integer 6...72"),
        (#"{"type": "number", "minimum": 0, "exclusiveMaximum": 1}"#, "number 0..<1"),
        (#"{"type": "number", "exclusiveMinimum": 0, "maximum": 1}"#, "number > 0 and <= 1"),
        (#"{"type": "integer", "minimum": 1}"#, "integer >= 1"),
        (#"{"type": "number", "exclusiveMaximum": 0.5}"#, "number < 0.5"),
        (#"{"type": "integer", "minimum": 0, "exclusiveMinimum": 5}"#, "integer > 5"),
        (#"{"type": "string"}"#, "string"),
        (#"{"type": "string", "minLength": 1, "maxLength": 64}"#, "string of 1...64 characters"),
        (#"{"type": "string", "minLength": 1}"#, "string of at least 1 character"),
        (#"{"type": "array", "items": {"type": "string"}}"#, "array of string"),
        (#"{"type": "array", "items": {"type": ["string", "null"]}}"#, "array of (string or null)"),
        (#"{"type": "array"}"#, "array"),
        (#"{"type": "object", "properties": {"a": {}}}"#, "object"),
        (#"{"type": "boolean"}"#, "boolean"),
        (#"{"enum": ["a", "b"]}"#, #"one of "a", "b""#),
        (#"{"type": "string", "enum": ["a", "b"]}"#, #"one of "a", "b""#),
        (#"{"const": 3}"#, "exactly 3"),
        (#"{"type": ["null", "integer"]}"#, "integer or null"),
        (#"{"type": ["integer", "string"], "minimum": 1}"#, "integer >= 1 or string"),
        ("{}", "any"),
        (#"{"minimum": 3}"#, "any"),
    ])
    func typeSummaries(schemaText: String, expected: String) throws {
        #expect(try schema(schemaText).typeSummary == expected)
    }

    @Test func keepsTheSchemaAsGiven() throws {
        let text = #"{"type": "integer", "title": "Size", "maximum": 72}"#
        let parsed = try schema(text)
        #expect(parsed.json == (try JSONValue(parsing: text)))
        #expect(parsed == (try schema(text)))
        #expect(parsed != (try schema(#"{"type": "integer"}"#)))
        #expect(Set([parsed, try schema(text)]).count == 1)
    }

    /// Checking the text and checking the parsed value agree on every schema and value below, conforming or not.
    @Test func textAndValueAgree() throws {
        let schemas = [
            #"{"type": "integer", "minimum": 6, "maximum": 72}"#,
            #"{"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}"#,
            #"{"type": ["string", "null"], "minLength": 2, "maxLength": 3}"#,
            #"{"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2}"#,
            #"{"type": "object", "properties": {"p": {"type": "string", "maxLength": 4}}, "required": ["p"], "#
                + #""additionalProperties": false}"#,
            #"{"type": "object", "additionalProperties": {"type": "integer"}}"#,
            #"{"enum": ["a", 1, null]}"#,
            #"{}"#,
        ]
        let values = [
            "5", "6", "72", "73", "-1", "0", "0.5", "1", "1.0", "1e2", "12345678901234567890", #""ab""#, #""abcd""#,
            #""a""#, #""\u00e9t""#, "\"\u{e9}t\u{e9}\"", "\"\u{1F600}\u{1F600}\"", "null", "true", "false", "[]",
            "[true]", "[true,false,true]", #"{"p":"abc"}"#, #"{"p":"abcde"}"#, #"{"p":"a","q":1}"#, #"{"q":1}"#,
            "{}", #"{"a":1,"b":"x"}"#, #"{"a\u0062":1}"#, #"[[1,{"x":[]}],"s"]"#, #" [ 1 , 2 ] "#,
        ]
        for schemaText in schemas {
            let parsed = try schema(schemaText)
            for valueText in values {
                let value = try JSONValue(parsing: valueText)
                var text: [UInt8] = []
                value.encode(into: &text)
                #expect(
                    parsed.violation(ofValidJSON: text) == parsed.violation(of: value),
                    "\(schemaText) against \(valueText)")
                #expect(
                    parsed.violation(ofValidJSON: Array(valueText.utf8)) == parsed.violation(of: value),
                    "\(schemaText) against \(valueText) as written")
            }
        }
    }
}
