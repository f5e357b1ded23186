//! The few NVTX v3 ABI items the injection needs, declared from NVIDIA's headers
//! (`nvtx3/nvToolsExt.h`, `nvtx3/nvtxDetail/nvtxTypes.h`, `nvtxInit.h`; NVTX is Apache-2.0 WITH
//! LLVM-exception, <https://github.com/NVIDIA/NVTX>), not copied from them.
//!
//! The handshake: a program's first NVTX call loads `$NVTX_INJECTION64_PATH` and calls its
//! `InitializeInjectionNvtx2(GetExportTable)`. `GetExportTable(NVTX_ETID_CALLBACKS)` gives
//! [`ExportTableCallbacks`], whose `GetModuleFunctionTable(module, &table, &size)` gives, per
//! module (core, core2), an array indexed by callback id of pointers to the program's function
//! pointer slots: the tool writes its functions into them. Slots left alone become no-ops.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `NvtxExportTableID::NVTX_ETID_CALLBACKS`.
pub const ETID_CALLBACKS: u32 = 1;
/// `NvtxCallbackModule`: `NVTX_CB_MODULE_CORE`, `NVTX_CB_MODULE_CORE2`.
pub const MODULE_CORE: c_int = 1;
pub const MODULE_CORE2: c_int = 5;

/// `NvtxCallbackIdCore` (nvtxTypes.h).
pub mod core {
    pub const MARK_EX: usize = 1;
    pub const MARK_A: usize = 2;
    pub const MARK_W: usize = 3;
    pub const RANGE_START_EX: usize = 4;
    pub const RANGE_START_A: usize = 5;
    pub const RANGE_START_W: usize = 6;
    pub const RANGE_END: usize = 7;
    pub const RANGE_PUSH_EX: usize = 8;
    pub const RANGE_PUSH_A: usize = 9;
    pub const RANGE_PUSH_W: usize = 10;
    pub const RANGE_POP: usize = 11;
    pub const NAME_CATEGORY_A: usize = 12;
    pub const NAME_CATEGORY_W: usize = 13;
    pub const NAME_OS_THREAD_A: usize = 14;
    pub const NAME_OS_THREAD_W: usize = 15;
}

/// `NvtxCallbackIdCore2` (nvtxTypes.h). Resource create/destroy are left to NVTX's no-ops.
pub mod core2 {
    pub const DOMAIN_MARK_EX: usize = 1;
    pub const DOMAIN_RANGE_START_EX: usize = 2;
    pub const DOMAIN_RANGE_END: usize = 3;
    pub const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub const DOMAIN_RANGE_POP: usize = 5;
    pub const DOMAIN_NAME_CATEGORY_A: usize = 8;
    pub const DOMAIN_NAME_CATEGORY_W: usize = 9;
    pub const DOMAIN_REGISTER_STRING_A: usize = 10;
    pub const DOMAIN_REGISTER_STRING_W: usize = 11;
    pub const DOMAIN_CREATE_A: usize = 12;
    pub const DOMAIN_CREATE_W: usize = 13;
    pub const DOMAIN_DESTROY: usize = 14;
}

/// `nvtxMessageType_t`.
pub const MESSAGE_ASCII: i32 = 1;
pub const MESSAGE_UNICODE: i32 = 2;
pub const MESSAGE_REGISTERED: i32 = 3;

/// `NvtxFunctionPointer`: an uncallable function pointer, cast to the slot's real type.
pub type FunctionPointer = unsafe extern "C" fn();
/// `NvtxFunctionTable`: an array of pointers to the program's function pointer slots.
pub type FunctionTable = *mut *mut Option<FunctionPointer>;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
pub struct ExportTableCallbacks {
    pub struct_size: usize,
    pub get_module_function_table:
        Option<unsafe extern "C" fn(c_int, *mut FunctionTable, *mut c_uint) -> c_int>,
}

/// `NvtxGetExportTableFunc_t`.
pub type GetExportTable = Option<unsafe extern "C" fn(u32) -> *const c_void>;

/// `nvtxMessageValue_t`: one pointer, read as the attributes' `messageType` says.
#[repr(C)]
#[derive(Clone, Copy)]
pub union MessageValue {
    pub ascii: *const c_char,
    pub unicode: *const libc::wchar_t,
    pub registered: *const c_void,
}

/// `nvtxEventAttributes_v2` (the payload union is 8 bytes; its value is not used).
#[repr(C)]
pub struct EventAttributes {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub color_type: i32,
    pub color: u32,
    pub payload_type: i32,
    pub reserved0: i32,
    pub payload: u64,
    pub message_type: i32,
    pub message: MessageValue,
}

/// The smallest `size` a program may give and still carry a message: up to `message`'s end.
pub const ATTRIBUTES_WITH_MESSAGE: usize = std::mem::size_of::<EventAttributes>();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attributes_have_the_headers_layout() {
        // NVTX_EVENT_ATTRIB_STRUCT_SIZE on LP64: 48 bytes, the message at offset 40.
        assert_eq!(std::mem::size_of::<EventAttributes>(), 48);
        assert_eq!(std::mem::offset_of!(EventAttributes, category), 4);
        assert_eq!(std::mem::offset_of!(EventAttributes, payload), 24);
        assert_eq!(std::mem::offset_of!(EventAttributes, message_type), 32);
        assert_eq!(std::mem::offset_of!(EventAttributes, message), 40);
    }
}
