extension SignalProtocol where Element: Sendable {
    /// The values of this signal as an `AsyncStream`, buffered without limit.
    ///
    /// The signal is observed when this property is read; the stream finishes when the signal
    /// completes, and the observation is disposed when the stream is finished or its consumer
    /// stops iterating (for example, when the iterating task is cancelled).
    public var values: AsyncStream<Element> {
        values(bufferingPolicy: .unbounded)
    }

    /// The values of this signal as an `AsyncStream` with the given buffering policy (for example
    /// `.bufferingNewest(1)` for a consumer that only needs the latest value).
    public func values(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let subscription = observe { event in
            switch event {
            case .next(let element): continuation.yield(element)
            case .completed: continuation.finish()
            }
        }
        continuation.onTermination = { _ in subscription.dispose() }
        return stream
    }
}

extension Signal where Element: Sendable {
    /// A signal that iterates `sequence` once per observer, in a new task, and sends its elements;
    /// it completes when the sequence ends.
    ///
    /// Disposing cancels the task; an element that the task receives after the disposal is not
    /// sent, and neither is the completion. Elements are sent from the iterating task, in the order
    /// of the sequence. The task holds the sequence and the observer until it ends.
    public init<Sequence: AsyncSequence & Sendable>(sequence: Sequence)
    where Sequence.Element == Element, Sequence.Failure == Never {
        self.init { observer in
            let target = UncheckedSendable(observer)
            let disposed = SerialDisposable()
            let task = Task {
                var iterator = sequence.makeAsyncIterator()
                while let element = await iterator.next(isolation: nil) {
                    if disposed.isDisposed || Task.isCancelled { return }
                    target.value(.next(element))
                }
                if !disposed.isDisposed { target.value(.completed) }
            }
            disposed.inner = BlockDisposable { task.cancel() }
            return disposed
        }
    }
}
