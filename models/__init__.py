"""Model families and their training: MNIST data, quantisation-aware training, the MNIST
CNN, transformers and the chat model. They reach netlists through `interop/` (the
importers and exporters); nothing here knows about maps or the engine."""
