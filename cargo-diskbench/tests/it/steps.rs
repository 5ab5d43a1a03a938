//! Integration tests: steps.
