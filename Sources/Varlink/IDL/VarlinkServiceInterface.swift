/// The `org.varlink.service` interface that every varlink service implements.
public enum VarlinkServiceInterface {
    /// The interface name.
    public static let name = "org.varlink.service"

    /// The interface description in varlink IDL.
    public static let description = """
        # Every varlink service provides this interface: it names the service and
        # lists and describes the interfaces the service offers.
        interface org.varlink.service

        # Describes the service and lists the interfaces it offers.
        method GetInfo() -> (
          vendor: string,
          product: string,
          version: string,
          url: string,
          interfaces: []string
        )

        # Returns the IDL text of one of the service's interfaces.
        method GetInterfaceDescription(interface: string) -> (description: string)

        # The service does not offer the named interface.
        error InterfaceNotFound (interface: string)

        # The interface has no method of that name.
        error MethodNotFound (method: string)

        # The interface declares the method, but the service does not implement it.
        error MethodNotImplemented (method: string)

        # A parameter is missing or has an unusable value.
        error InvalidParameter (parameter: string)

        # The caller is not allowed to call the method.
        error PermissionDenied ()

        # The method can only be called with "more": true.
        error ExpectedMore ()
        """

    /// The qualified names of the interface's methods and errors, for a client to call and a program to tell
    /// the errors apart. A test checks them against ``description``.
    public enum Names {
        public static let getInfo = "org.varlink.service.GetInfo"
        public static let getInterfaceDescription = "org.varlink.service.GetInterfaceDescription"
        public static let interfaceNotFound = "org.varlink.service.InterfaceNotFound"
        public static let methodNotFound = "org.varlink.service.MethodNotFound"
        public static let methodNotImplemented = "org.varlink.service.MethodNotImplemented"
        public static let invalidParameter = "org.varlink.service.InvalidParameter"
        public static let permissionDenied = "org.varlink.service.PermissionDenied"
        public static let expectedMore = "org.varlink.service.ExpectedMore"

        /// Every method's qualified name.
        public static let methods = [getInfo, getInterfaceDescription]
        /// Every error's qualified name.
        public static let errors = [
            interfaceNotFound, methodNotFound, methodNotImplemented, invalidParameter, permissionDenied, expectedMore,
        ]
    }
}
