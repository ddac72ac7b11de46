def tokenizer(const unsigned char[::1] text, long long[::1] counts):
    cdef Py_ssize_t words = 0, numbers = 0, marks = 0, n = text.shape[0], i = 0
    cdef int c, dot
    while i < n:
        c = text[i]
        if c == 32 or c == 10 or c == 9 or c == 13:
            i += 1
        elif 48 <= c <= 57:
            dot = 0
            i += 1
            while i < n:
                c = text[i]
                if 48 <= c <= 57:
                    i += 1
                elif c == 46 and dot == 0:
                    dot = 1
                    i += 1
                else:
                    break
            numbers += 1
        elif 97 <= c <= 122 or 65 <= c <= 90 or c == 95:
            i += 1
            while i < n:
                c = text[i]
                if 97 <= c <= 122 or 65 <= c <= 90 or 48 <= c <= 57 or c == 95 or c == 39:
                    i += 1
                else:
                    break
            words += 1
        else:
            marks += 1
            i += 1
    counts[0] = words
    counts[1] = numbers
    counts[2] = marks
    return words + numbers + marks
