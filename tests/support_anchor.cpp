// Keeps longrun_test_support non-empty while tests/support/ has no sources.
