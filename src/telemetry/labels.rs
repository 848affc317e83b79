//! `labelled!`: an enum whose variants are the values of a metric label, declared with
//! their label text in one list, so the list of every value (`ALL`, which pre-initialises
//! the series) cannot miss a variant. [`Labelled`] lets code above take any such enum.

/// An enum declared with `labelled!`: every value and its label text.
pub trait Labelled: Copy + 'static {
    /// Every value, in declaration order.
    const ALL: &'static [Self];

    /// The label value.
    fn label(self) -> &'static str;

    /// The labels of every value, in declaration order.
    fn labels() -> Vec<&'static str> {
        Self::ALL.iter().map(|v| v.label()).collect()
    }
}

/// Declares `enum $name` with `ALL` (every variant, in order) and `label()`, also as
/// [`Labelled`].
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

        impl $crate::telemetry::Labelled for $name {
            const ALL: &'static [Self] = Self::ALL;

            fn label(self) -> &'static str {
                Self::label(self)
            }
        }
    };
}

pub(crate) use labelled;
