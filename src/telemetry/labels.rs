//! `labelled!`: an enum whose variants are the values of a metric label, declared with
//! their label text in one list, so the list of every value (`ALL`, which pre-initialises
//! the series) cannot miss a variant.

/// Declares `enum $name` with `ALL` (every variant, in order) and `label()`.
macro_rules! labelled {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $label:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The label value.
            pub fn label(self) -> &'static str {
                match self {
                    $(Self::$variant => $label),+
                }
            }
        }
    };
}

pub(crate) use labelled;
