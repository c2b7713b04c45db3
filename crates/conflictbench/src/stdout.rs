//! The one way the CLI prints a result line on standard output.

/// Prints `s` and a newline on standard output.
#[allow(clippy::print_stdout)]
pub(crate) fn println_out(s: &str) {
    println!("{s}");
}
