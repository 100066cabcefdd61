"""Receiving dumps over HTTP: streamed multipart bodies, safe unpacking, validation."""
