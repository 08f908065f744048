//! The one schema check every reader runs first, and its migration error.
