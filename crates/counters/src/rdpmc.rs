//! rdpmc: reading a counter from user space through its mmap page (in progress).
