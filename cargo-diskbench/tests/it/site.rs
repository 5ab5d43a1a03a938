//! Integration tests: site.
