"""The CI client: ``graphboard ci-check`` packs dumps, uploads them to a graphboard server,
waits for the build and turns its verdict into an exit code. It talks to the server over
HTTP only (it imports nothing of the server)."""
