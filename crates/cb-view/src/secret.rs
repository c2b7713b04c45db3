//! The viewer's secrets: the access token beyond loopback and the form token of each
//! server, made at random and compared in constant time.

/// A fresh random token (32 hexadecimal digits): the access token of a viewer bound beyond
/// loopback, and the form token of every server.
pub fn new_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..16)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}

/// Whether `given` is `want`, in time independent of where they differ.
pub fn same_secret(given: &str, want: &str) -> bool {
    use subtle::ConstantTimeEq;
    bool::from(given.as_bytes().ct_eq(want.as_bytes()))
}
