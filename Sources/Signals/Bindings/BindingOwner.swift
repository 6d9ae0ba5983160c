/// A class whose bindings and observations end when it is deallocated.
///
/// Conform by declaring the bag as a stored property: `let bag = DisposeBag()`. A ``DisposeBag``
/// disposes its contents when it is deallocated, so everything added to the owner's bag ends when
/// the owner goes away. Bindings whose target is a `BindingOwner` (``BindingTarget``,
/// ``SignalProtocol/bind(to:context:setter:)``, `bind(to:_:)`) add themselves to
/// the target's bag, so they end, and release the source's observer, the moment the target is
/// deallocated; bindings to other objects end on the first value after the target is gone.
///
/// A stored property rather than hidden per-object storage: Linux has no Objective-C associated
/// objects, and an explicit bag keeps the lifetime visible in the owner's declaration.
public protocol BindingOwner: AnyObject {
    /// The bag that holds this object's bindings; disposed when the object is deallocated.
    var bag: DisposeBag { get }
}

extension Property: BindingOwner {}
extension PassthroughSubject: BindingOwner {}
