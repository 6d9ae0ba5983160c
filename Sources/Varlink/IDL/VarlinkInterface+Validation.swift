extension VarlinkInterface {
    /// The first input parameter of `method` (unqualified, e.g. `Get`) that is not optional but absent from
    /// `parameters` or `null` there (an `object` may be `null`); `nil` when every required parameter is present or
    /// the method is unknown.
    public func missingParameter(method: some StringProtocol, in parameters: [String: JSONValue]) -> String? {
        guard let definition = self.method(named: method) else { return nil }
        for field in definition.input where !field.type.isOptional {
            guard let value = parameters[field.name], !value.isNull || field.type == .object else { return field.name }
        }
        return nil
    }

    /// The first input parameter of `method` that is missing or whose value does not match its declared type;
    /// with `rejectingUnknown`, also the first parameter the method does not declare (in sorted order). `nil` when
    /// the parameters are valid or the method is unknown.
    ///
    /// `null` counts as absent, except for an `object`, which accepts any value, `null` included; `int` accepts
    /// integral numbers; `float` any number.
    public func invalidParameter(
        method: some StringProtocol,
        in parameters: [String: JSONValue],
        rejectingUnknown: Bool = false
    ) -> String? {
        guard let definition = self.method(named: method) else { return nil }
        for field in definition.input where !conforms(parameters[field.name], to: field.type) {
            return field.name
        }
        if rejectingUnknown {
            let declared = Set(definition.input.map(\.name))
            return parameters.keys.filter { !declared.contains($0) }.sorted().first
        }
        return nil
    }

    /// Whether `value` (`nil` for absent) conforms to `type`, resolving named types in this interface.
    public func conforms(_ value: JSONValue?, to type: VarlinkType) -> Bool {
        if case .optional(let wrapped) = type {
            guard let value, !value.isNull else { return true }
            return conforms(value, to: wrapped)
        }
        // An `object` is any JSON value, `null` included: only an absent one does not conform.
        if case .object = type { return value != nil }
        guard let value, !value.isNull else { return false }
        switch type {
        case .optional:
            return true
        case .bool:
            return value.boolValue != nil
        case .int:
            switch value {
            case .int: return true
            case .double(let number): return number == number.rounded() && abs(number) < 9.2e18
            default: return false
            }
        case .float:
            return value.doubleValue != nil
        case .string:
            return value.stringValue != nil
        case .object:
            return true
        case .named(let name):
            guard let definition = self.type(named: name) else { return false }
            return conforms(value, to: definition.type)
        case .array(let element):
            guard let elements = value.arrayValue else { return false }
            return elements.allSatisfy { conforms($0, to: element) }
        case .dictionary(let element):
            guard let members = value.objectValue else { return false }
            return members.values.allSatisfy { conforms($0, to: element) }
        case .structure(let fields):
            guard let members = value.objectValue else { return false }
            return fields.allSatisfy { conforms(members[$0.name], to: $0.type) }
        case .enumeration(let cases):
            guard let string = value.stringValue else { return false }
            return cases.contains(string)
        }
    }
}
