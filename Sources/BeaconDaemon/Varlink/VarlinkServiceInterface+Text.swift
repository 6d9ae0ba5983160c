/// The IDL of `org.varlink.service`, served by every ``VarlinkServer``.
enum VarlinkServiceIDL {
    static let name = "org.varlink.service"

    static let text = """
        # The interface every varlink service implements: what the service is and which interfaces it serves.
        interface org.varlink.service

        # Describes the service and lists the interfaces it implements.
        method GetInfo() -> (
            vendor: string,
            product: string,
            version: string,
            url: string,
            interfaces: []string
        )

        # Returns the IDL text of one of the implemented interfaces.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # No interface of that name is implemented.
        error InterfaceNotFound (interface: string)

        # The interface has no method of that name.
        error MethodNotFound (method: string)

        # The interface declares the method, but the service does not implement it.
        error MethodNotImplemented (method: string)

        # A parameter is missing, of the wrong type or has an invalid value.
        error InvalidParameter (parameter: string)

        # The caller may not use the method.
        error PermissionDenied ()

        # The method streams its replies and must be called with "more": true.
        error ExpectedMore ()
        """
}
