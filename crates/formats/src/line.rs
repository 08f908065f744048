//! The budget lines a profile's rows are on, and the illustrative step the course splits.
