"""The trainer layer every trainer here shares: trainer base, start-up checks, settings validators and
config compatibility, tensor utilities, critic layer norm, the compiled update step and the faster kernels."""
