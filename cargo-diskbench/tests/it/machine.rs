//! Integration tests: machine.
