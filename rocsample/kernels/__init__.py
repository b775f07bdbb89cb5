"""Device code, one file per kernel family. Each file defines ``build(cuda)``; see docs/DESIGN.md."""
