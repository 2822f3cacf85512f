//! Text in shared memory, which holds no pointers.

/// A message kept in shared memory, which holds no pointers: up to
/// [`ShortText::CAPACITY`] bytes of it, cut at a character boundary.
#[derive(Clone, Copy)]
pub struct ShortText {
    len: u16,
    bytes: [u8; ShortText::CAPACITY],
}

impl ShortText {
    pub const CAPACITY: usize = 400;

    pub fn new(text: &str) -> ShortText {
        let mut len = text.len().min(Self::CAPACITY);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        let mut bytes = [0; Self::CAPACITY];
        bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
        ShortText { len: len as u16, bytes }
    }
}

impl std::fmt::Debug for ShortText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

impl std::fmt::Display for ShortText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default())
    }
}
