//! Integration tests: github.
