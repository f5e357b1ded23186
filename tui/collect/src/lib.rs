//! provetop's collection layer (placeholder until the collect work lands).
