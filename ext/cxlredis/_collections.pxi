# Lists, sets and sorted sets (included by _store.pyx, so the trees' C is one translation
# unit with the arena's). A collection's entry holds the header of its trees (coll.h);
# the trees (tree.h) hold its elements as records:
#   list        one unkeyed tree: each element a record's value, in list order;
#   set         one keyed tree, by encoding: intset (every member an integer, few of them)
#               keyed by the integer, so members come in numeric order as from Redis's
#               intset; hashtable keyed by a hash of the member, then the member (SSCAN's
#               cursor is that hash);
#   sorted set  two keyed trees: by (score, member), and by (hash of member, member)
#               (ZSCORE, ZSCAN); each record's value is the score.
# Collection reads one (Keyspace.collection) or changes it in one transaction
# (Keyspace.write_collection): nobody sees a change until commit() publishes all of them
# in one store; abort(), or a failure (OutOfMemory), leaves the collection as it was.

cdef extern from "arena/tree.h":
    enum:
        CX_TXN_FULL
        CX_TXN_NOMEM
        CX_TXN_BAD
        CX_NODE
        CX_NODE_HDR
        CX_REC_MAX
    ctypedef struct cx_rec:
        const uint8_t* k
        const uint8_t* v
        uint32_t kl
        uint32_t vl
        uint64_t blob
    ctypedef struct cx_txn:
        int err
        int64_t bytes
        int64_t elems
        uint64_t nfresh
        uint64_t nretired
    ctypedef struct cx_cursor:
        int depth
    ctypedef struct cx_node:
        uint64_t size_state
        uint64_t txn
        uint64_t count
        uint32_t nrec
        uint32_t used
        uint16_t tenant
        uint8_t kind
    cx_node* CX_N(char* base, uint64_t off) nogil
    void cx_txn_begin(cx_txn* t, char* base, const cx_cfg* cfg, unsigned tenant, int64_t now) nogil
    void cx_txn_commit(cx_txn* t) nogil
    void cx_txn_abort(cx_txn* t) nogil
    uint64_t cx_tree_count(char* base, uint64_t root) nogil
    int cx_tree_get(char* base, uint64_t root, uint64_t pos, cx_rec* r) nogil
    uint64_t cx_tree_seek(char* base, uint64_t root, const uint8_t* k, uint32_t kl, int* exact) nogil
    int cx_tree_insert_at(cx_txn* t, uint64_t* root, uint64_t pos, const uint8_t* v, uint32_t vl) nogil
    int cx_tree_put(cx_txn* t, uint64_t* root, const uint8_t* k, uint32_t kl, const uint8_t* v, uint32_t vl,
                    int replace, int* existed) nogil
    int cx_tree_set_at(cx_txn* t, uint64_t* root, uint64_t pos, const uint8_t* v, uint32_t vl) nogil
    int cx_tree_delete_range(cx_txn* t, uint64_t* root, uint64_t start, uint64_t stop) nogil
    int cx_tree_clone(cx_txn* t, uint64_t src, uint64_t* dst) nogil
    int cx_cursor_seek(cx_cursor* c, char* base, uint64_t root, uint64_t pos) nogil
    int cx_cursor_next(cx_cursor* c) nogil
    int cx_cursor_prev(cx_cursor* c) nogil
    void cx_cursor_rec(const cx_cursor* c, cx_rec* r) nogil
    void cx_node_rec(char* base, uint64_t off, uint32_t i, cx_rec* r) nogil

cdef extern from "arena/coll.h":
    ctypedef struct cx_coll:
        uint64_t root[2]
        uint64_t bytes
        uint64_t elems
        uint64_t flags
    uint64_t CX_COLL_VALUE_BYTES
    cx_coll* cx_coll_of(cx_entry* e) nogil
    void cx_coll_init(char* base, uint64_t off, const cx_coll* c) nogil
    void cx_coll_publish(char* base, uint64_t off, const cx_coll* c) nogil
    int cx_coll_unflatten(cx_txn* t, cx_coll* c, const uint8_t* p, uint64_t len, int list) nogil

cdef extern from "arena/hash.h":
    uint64_t cx_hash_bytes(const uint8_t* p, size_t n, uint64_t seed) nogil

cdef extern from "arena/tenant.h":
    pass

# a collection's encoding (cx_coll.flags): what OBJECT ENCODING reports
ENCODING_INTSET = 0          # a set's
ENCODING_HASHTABLE = 1
ENCODING_LISTPACK = 0        # a sorted set's
ENCODING_SKIPLIST = 1
cdef uint64_t WIDE = 1       # the flag: hashtable / skiplist
# mixed into the arena's hash seed for members (a key's hash uses the seed alone)
cdef uint64_t MEMBER_SEED = 0x6d656d6265727321
cdef uint64_t SIGN = 1ull << 63


cdef inline void put_be64(uint8_t* p, uint64_t v) noexcept:
    cdef int i
    for i in range(8):
        p[i] = <uint8_t>(v >> (56 - 8 * i))


cdef inline uint64_t get_be64(const uint8_t* p) noexcept:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | p[i]
    return v


cdef inline uint64_t score_order(double score) noexcept:
    """A score as 64 bits whose unsigned order is the scores' (-0 and 0 one value, as
    Redis compares them)."""
    cdef uint64_t bits
    if score == 0:
        score = 0.0
    memcpy(&bits, &score, 8)
    return ~bits if bits & SIGN else bits | SIGN


cdef inline double read_score(const uint8_t* v) noexcept:
    cdef double s
    memcpy(&s, v, 8)
    return s


cdef struct Key:
    # a tree key under construction: 8 bytes of order (integer, hash, score), then the member
    uint8_t* p
    uint32_t n
    uint8_t small[248]


cdef inline int key_build(Key* k, uint64_t order, const uint8_t* member, Py_ssize_t n) except -1:
    if n > CX_REC_MAX - 8:
        raise ValueError("a member longer than 1 GiB")
    k.n = <uint32_t>(8 + n)
    if k.n <= sizeof(k.small):
        k.p = &k.small[0]
    else:
        k.p = <uint8_t*>PyMem_Malloc(k.n)
    if k.p == NULL:
        raise MemoryError()
    put_be64(k.p, order)
    if n:
        memcpy(k.p + 8, member, n)
    return 0


cdef inline void key_free(Key* k) noexcept:
    if k.p != &k.small[0]:
        PyMem_Free(k.p)
    k.p = NULL


cdef inline bytes rec_value(cx_rec* r):
    return PyBytes_FromStringAndSize(<const char*>r.v, r.vl)


cdef inline bytes rec_member(cx_rec* r):
    """The member of a hashtable set's or a sorted set's record (after its 8 order bytes)."""
    return PyBytes_FromStringAndSize(<const char*>r.k + 8, r.kl - 8)


cdef inline bytes int_member(cx_rec* r):
    """The member of an intset's record: its integer, as text."""
    cdef char text[24]
    cdef size_t n = cx_ll2string(text, <long long>(get_be64(r.k) ^ SIGN))
    return PyBytes_FromStringAndSize(text, n)


cdef class Collection:
    """A list, set or sorted set of one keyspace. Read: from Keyspace.collection, valid
    until the next write. Written: from Keyspace.write_collection, which pins its entry and
    opens a transaction; its changes are seen once commit() publishes them (the entry
    made, or dropped when it is left empty), or dropped whole by abort() (a `with` block
    commits, or aborts on an exception)."""
    cdef Keyspace store
    cdef Arena a
    cdef readonly int type
    cdef uint64_t off              # its entry; 0 while a write creates it
    cdef cx_coll head              # its header (a write's, as it will be published)
    cdef cx_txn txn
    cdef cx_cfg cfg                # the transaction's allocations' settings
    cdef bint writing
    cdef bint replacing            # a write that replaces whatever the key holds (a *STORE's)
    cdef uint64_t flags_at_start
    cdef unsigned pdb
    cdef int store_db              # the logical db of that key
    cdef object key                # the key it is created under (a write of a missing key)
    cdef uint64_t seed

    def __dealloc__(self):
        if self.writing:
            self._end(False)

    cdef inline char* base(self) except NULL:
        return open_base(self.a)

    # ---- what every collection has ----
    def __len__(self):
        return cx_tree_count(self.base(), self.head.root[0])

    @property
    def encoding(self):
        """ENCODING_* of a set or sorted set (a list has none of its own)."""
        return self.head.flags & WIDE

    @property
    def tree_bytes(self):
        """The bytes of its trees' blocks (MEMORY USAGE adds its entry's)."""
        return self.head.bytes

    @property
    def generation(self):
        return CX_E(self.base(), self.off).generation if self.off else 0

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if self.writing:
            self._end(kind is None)

    def commit(self):
        """Publish the changes: a collection left empty is deleted, one created is made.
        Returns whether anything changed."""
        return self._end(True)

    def abort(self):
        self._end(False)

    cdef bint _end(self, bint keep) except -1:
        cdef char* base = self.a.base
        cdef cx_entry* e
        cdef uint64_t fresh
        cdef bint changed = self.txn.nfresh or self.txn.nretired or self.head.flags != self.flags_at_start
        cdef Buf k
        if not self.writing:
            raise ValueError("not a write")
        self.writing = False
        if base == NULL:
            return False
        try:
            if keep and self.replacing and not self.head.root[0]:
                cx_txn_abort(&self.txn)
                return self.store.delete(self.store_db, self.key)   # an empty result deletes the key
            if not keep or not changed:
                cx_txn_abort(&self.txn)
                return False
            self.head.bytes += <uint64_t>self.txn.bytes
            self.head.elems += <uint64_t>self.txn.elems
            if self.off:
                cx_coll_publish(base, self.off, &self.head)
                cx_txn_commit(&self.txn)
                if not self.head.root[0]:
                    cx_drop(base, self.off, 1)
                return True
            if not self.head.root[0]:
                cx_txn_abort(&self.txn)
                return False
            key_open(&k, self.key)
            try:
                fresh = cx_reserve(base, self.store.tenant, k.len, CX_COLL_VALUE_BYTES, CX_COLL_VALUE_BYTES,
                                   &self.cfg, cx_now_ms())
                if not fresh:
                    cx_txn_abort(&self.txn)
                    raise_oom(self.a, self.store.tenant, self.head.bytes)
                cx_coll_init(base, fresh, &self.head)
                cx_commit(base, fresh, self.pdb, k.ptr, k.len, -1, self.type, 0, cx_now_ms(), 0)
                CX_SB(base).tmeta[self.store.tenant].bytes_written += self.head.elems
            finally:
                buf_close(&k)
            self.off = fresh
            cx_txn_commit(&self.txn)
            return True
        finally:
            if self.off and CX_E(base, self.off).pins:
                cx_unpin(base, self.off)

    def copy_to(self, Keyspace dst, int db, key):
        """A write of a new collection at key of dst (another tenant's namespace, or arena)
        holding the same elements in the same encoding; the caller commits it. Members are
        keyed anew: a hash is the arena's own."""
        cdef Collection out = dst.write_collection(db, key, self.type)
        cdef uint64_t n = cx_tree_count(self.base(), self.head.root[0])
        cdef int64_t unbounded = <int64_t>(n + 1)
        if len(out):
            out.abort()
            raise ValueError("the destination of a collection copy must be missing")
        out.head.flags = self.head.flags
        if self.type == LIST_TYPE:
            for value in self.list_range(0, n):
                out.list_insert(len(out), value)
        elif self.type == SET_TYPE:
            for member in self.set_members():
                out.set_add(member, unbounded)
        else:
            for member, score in self.zset_range(0, n):
                out.zset_put(member, score, unbounded, 1 << 62)
        return out

    def load_flat(self, const uint8_t[::1] flat):
        """A new collection's elements from flat: cx_coll_flatten's bytes (coll.h), as the
        disk tier wrote them; ValueError if they are not such bytes."""
        self._writable()
        if self.off or self.head.root[0]:
            raise ValueError("only a new collection is loaded")
        if flat.shape[0] == 0 or cx_coll_unflatten(&self.txn, &self.head, &flat[0], flat.shape[0],
                                                   self.type == LIST_TYPE):
            self._check()
            raise ValueError("not a flattened collection")

    cdef int _check(self) except -1:
        """After each change of a write: its failure, if it failed."""
        cdef int err = self.txn.err
        if not err:
            return 0
        if err == CX_TXN_FULL:
            if self.a.backing_errno:
                raise OutOfMemory(f"the arena's backing has no room: {os.strerror(self.a.backing_errno)}")
            raise_oom(self.a, self.store.tenant, 0)
        if err == CX_TXN_NOMEM:
            raise MemoryError()
        raise IndexError("position out of range")

    cdef inline int _writable(self) except -1:
        if not self.writing:
            raise ValueError("a collection read, not written")
        return 0

    # ---- lists ----
    def list_get(self, int64_t index):
        """The element at index (0-based; negative from the end), None if out of range."""
        cdef cx_rec r
        cdef uint64_t n = cx_tree_count(self.base(), self.head.root[0])
        if index < 0:
            index += n
        if index < 0 or <uint64_t>index >= n or not cx_tree_get(self.a.base, self.head.root[0], index, &r):
            return None
        return rec_value(&r)

    def list_range(self, uint64_t start, uint64_t stop):
        """The elements at [start, stop), in order."""
        cdef cx_cursor cur
        cdef cx_rec r
        cdef list out = []
        cdef uint64_t i = start
        if i < stop and cx_cursor_seek(&cur, self.base(), self.head.root[0], i):
            while True:
                cx_cursor_rec(&cur, &r)
                out.append(rec_value(&r))
                i += 1
                if i >= stop or not cx_cursor_next(&cur):
                    break
        return out

    def list_walk(self, uint64_t start, bint reverse=False):
        """(index, element) from start on, toward the end, or (reverse) toward the head.
        Not to be kept across a change."""
        cdef cx_cursor cur
        cdef cx_rec r
        cdef uint64_t i = start
        if not cx_cursor_seek(&cur, self.base(), self.head.root[0], i):
            return
        while True:
            cx_cursor_rec(&cur, &r)
            yield i, rec_value(&r)
            if reverse:
                if not cx_cursor_prev(&cur):
                    return
                i -= 1
            else:
                if not cx_cursor_next(&cur):
                    return
                i += 1

    def list_insert(self, uint64_t index, value):
        """value inserted before the element at index (at the end: index == len)."""
        cdef Buf v
        self._writable()
        buf_open(&v, value)
        try:
            if v.len > CX_REC_MAX:
                raise ValueError("an element longer than 1 GiB")
            cx_tree_insert_at(&self.txn, &self.head.root[0], index, v.ptr, <uint32_t>v.len)
        finally:
            buf_close(&v)
        return self._check()

    def list_set(self, uint64_t index, value):
        cdef Buf v
        self._writable()
        buf_open(&v, value)
        try:
            if v.len > CX_REC_MAX:
                raise ValueError("an element longer than 1 GiB")
            cx_tree_set_at(&self.txn, &self.head.root[0], index, v.ptr, <uint32_t>v.len)
        finally:
            buf_close(&v)
        return self._check()

    def delete_range(self, uint64_t start, uint64_t stop):
        """The elements at positions [start, stop) removed (a list's; a set's, in its order)."""
        self._writable()
        if self.type == ZSET_TYPE:
            return self.zset_delete_range(start, stop)
        cx_tree_delete_range(&self.txn, &self.head.root[0], start, stop)
        return self._check()

    # ---- sets ----
    cdef int _set_key(self, const uint8_t* member, Py_ssize_t n, Key* k, bint* fits) except -1:
        """The tree key of member; *fits: the set's encoding can hold it at all (an intset
        holds integers only)."""
        cdef long long v
        fits[0] = True
        if self.head.flags & WIDE:
            return key_build(k, cx_hash_bytes(member, n, self.seed), member, n)
        if not cx_string2ll(<const char*>member, n, &v):
            fits[0] = False
            return 0
        return key_build(k, (<uint64_t>v) ^ SIGN, NULL, 0)

    def set_contains(self, member):
        cdef Buf m
        cdef Key k
        cdef bint fits
        cdef int exact = 0
        buf_open(&m, member)
        try:
            self._set_key(m.ptr, m.len, &k, &fits)
            if not fits:
                return False
            cx_tree_seek(self.base(), self.head.root[0], k.p, k.n, &exact)
            key_free(&k)
        finally:
            buf_close(&m)
        return bool(exact)

    cdef bytes _set_member(self, cx_rec* r):
        return rec_member(r) if self.head.flags & WIDE else int_member(r)

    def set_member_at(self, uint64_t pos):
        cdef cx_rec r
        if not cx_tree_get(self.base(), self.head.root[0], pos, &r):
            raise IndexError(pos)
        return self._set_member(&r)

    def set_members(self, uint64_t start=0, uint64_t stop=<uint64_t>-1):
        """The members at positions [start, stop), in the set's order."""
        cdef cx_cursor cur
        cdef cx_rec r
        cdef list out = []
        cdef uint64_t i = start
        if i < stop and cx_cursor_seek(&cur, self.base(), self.head.root[0], i):
            while True:
                cx_cursor_rec(&cur, &r)
                out.append(self._set_member(&r))
                i += 1
                if i >= stop or not cx_cursor_next(&cur):
                    break
        return out

    def set_add(self, member, int64_t max_intset):
        """Add member; True if it was not there. An intset becomes a hashtable, for good,
        when a member is not an integer or it grows past max_intset members, as Redis's."""
        cdef Buf m
        cdef Key k
        cdef bint fits
        cdef int existed = 0
        self._writable()
        buf_open(&m, member)
        try:
            self._set_key(m.ptr, m.len, &k, &fits)
            if not fits:
                self._widen_set()
                self._set_key(m.ptr, m.len, &k, &fits)
            try:
                cx_tree_put(&self.txn, &self.head.root[0], k.p, k.n, NULL, 0, 0, &existed)
            finally:
                key_free(&k)
            self._check()
        finally:
            buf_close(&m)
        if not (self.head.flags & WIDE) and cx_tree_count(self.a.base, self.head.root[0]) > <uint64_t>max(max_intset, 0):
            self._widen_set()
        return not existed

    def set_remove(self, member):
        cdef Buf m
        cdef Key k
        cdef bint fits
        cdef int exact = 0
        cdef uint64_t pos
        self._writable()
        buf_open(&m, member)
        try:
            self._set_key(m.ptr, m.len, &k, &fits)
            if not fits:
                return False
            pos = cx_tree_seek(self.base(), self.head.root[0], k.p, k.n, &exact)
            key_free(&k)
        finally:
            buf_close(&m)
        if exact:
            cx_tree_delete_range(&self.txn, &self.head.root[0], pos, pos + 1)
            self._check()
        return bool(exact)

    def set_encode_as(self, int encoding):
        """The encoding a set starts in: a hashtable (the members re-keyed, any time), or an
        intset again, for a set this write emptied (Redis builds SPOP's remainder and a
        *STORE's result as new sets, which may be intsets)."""
        self._writable()
        if encoding == ENCODING_HASHTABLE:
            self._widen_set()
        elif cx_tree_count(self.base(), self.head.root[0]):
            raise ValueError("only an empty set becomes an intset")
        else:
            self.head.flags &= ~WIDE

    cdef int _widen_set(self) except -1:
        """intset -> hashtable: the members re-keyed by their hashes."""
        cdef list members
        if self.head.flags & WIDE:
            return 0
        members = self.set_members()
        cx_tree_delete_range(&self.txn, &self.head.root[0], 0, len(members))
        self._check()
        self.head.flags |= WIDE
        for member in members:
            self.set_add(member, 0)
        return 0

    def set_scan(self, uint64_t cursor, Py_ssize_t count):
        """SSCAN's step: (next cursor, members). An intset answers whole, with cursor 0, as
        Redis's does; a hashtable from the member hash `cursor` on, by hash (never
        splitting members of one hash), the cursor after the last one given."""
        cdef cx_cursor cur
        cdef cx_rec r
        cdef uint8_t start[8]
        cdef int exact
        cdef uint64_t h, last = 0
        cdef list out = []
        if not (self.head.flags & WIDE):
            return 0, self.set_members()
        put_be64(start, cursor)
        if not cx_cursor_seek(&cur, self.base(), self.head.root[0],
                              cx_tree_seek(self.a.base, self.head.root[0], start, 8, &exact)):
            return 0, out
        while True:
            cx_cursor_rec(&cur, &r)
            h = get_be64(r.k)
            if len(out) >= count and h != last:
                return h, out
            out.append(rec_member(&r))
            last = h
            if not cx_cursor_next(&cur):
                return 0, out

    # ---- sorted sets ----
    cdef int _member_key(self, const uint8_t* member, Py_ssize_t n, Key* k) except -1:
        return key_build(k, cx_hash_bytes(member, n, self.seed), member, n)

    def zset_score(self, member):
        """member's score, None if it is not there."""
        cdef Buf m
        cdef Key k
        cdef cx_rec r
        cdef int exact = 0
        cdef uint64_t pos
        buf_open(&m, member)
        try:
            self._member_key(m.ptr, m.len, &k)
            pos = cx_tree_seek(self.base(), self.head.root[1], k.p, k.n, &exact)
            key_free(&k)
        finally:
            buf_close(&m)
        if not exact:
            return None
        cx_tree_get(self.a.base, self.head.root[1], pos, &r)
        return read_score(r.v)

    def zset_put(self, member, double score, int64_t max_entries, int64_t max_value):
        """member at score (inserted, or moved): True if it is new. A listpack becomes a
        skiplist, for good, when it would hold more than max_entries members or a
        member longer than max_value bytes, as Redis's."""
        cdef Buf m
        cdef Key mk, sk
        cdef cx_rec r
        cdef int exact = 0, existed = 0
        cdef uint64_t pos
        cdef double old
        self._writable()
        buf_open(&m, member)
        try:
            self._member_key(m.ptr, m.len, &mk)
            try:
                pos = cx_tree_seek(self.base(), self.head.root[1], mk.p, mk.n, &exact)
                if exact:
                    cx_tree_get(self.a.base, self.head.root[1], pos, &r)
                    old = read_score(r.v)
                    if old == score:
                        return False
                    key_build(&sk, score_order(old), m.ptr, m.len)
                    try:
                        pos = cx_tree_seek(self.a.base, self.head.root[0], sk.p, sk.n, &exact)
                        if not exact:
                            raise ValueError("a sorted set's trees disagree")
                        cx_tree_delete_range(&self.txn, &self.head.root[0], pos, pos + 1)
                    finally:
                        key_free(&sk)
                elif (not (self.head.flags & WIDE)
                      and (cx_tree_count(self.a.base, self.head.root[0]) + 1 > <uint64_t>max(max_entries, 0)
                           or m.len > max_value)):
                    self.head.flags |= WIDE
                key_build(&sk, score_order(score), m.ptr, m.len)
                try:
                    cx_tree_put(&self.txn, &self.head.root[0], sk.p, sk.n, <const uint8_t*>&score, 8, 1, &existed)
                finally:
                    key_free(&sk)
                cx_tree_put(&self.txn, &self.head.root[1], mk.p, mk.n, <const uint8_t*>&score, 8, 1, &existed)
            finally:
                key_free(&mk)
            self._check()
        finally:
            buf_close(&m)
        return not exact

    def zset_remove(self, member):
        cdef Buf m
        cdef Key mk, sk
        cdef cx_rec r
        cdef int exact = 0
        cdef uint64_t pos
        self._writable()
        buf_open(&m, member)
        try:
            self._member_key(m.ptr, m.len, &mk)
            try:
                pos = cx_tree_seek(self.base(), self.head.root[1], mk.p, mk.n, &exact)
                if not exact:
                    return False
                cx_tree_get(self.a.base, self.head.root[1], pos, &r)
                key_build(&sk, score_order(read_score(r.v)), m.ptr, m.len)
                cx_tree_delete_range(&self.txn, &self.head.root[1], pos, pos + 1)
                try:
                    pos = cx_tree_seek(self.a.base, self.head.root[0], sk.p, sk.n, &exact)
                finally:
                    key_free(&sk)
                if exact:
                    cx_tree_delete_range(&self.txn, &self.head.root[0], pos, pos + 1)
            finally:
                key_free(&mk)
            self._check()
        finally:
            buf_close(&m)
        return True

    def zset_rank(self, member):
        """member's position in score order, None if it is not there."""
        cdef Buf m
        cdef Key k
        cdef cx_rec r
        cdef int exact = 0
        cdef uint64_t pos
        buf_open(&m, member)
        try:
            self._member_key(m.ptr, m.len, &k)
            pos = cx_tree_seek(self.base(), self.head.root[1], k.p, k.n, &exact)
            key_free(&k)
            if not exact:
                return None
            cx_tree_get(self.a.base, self.head.root[1], pos, &r)
            key_build(&k, score_order(read_score(r.v)), m.ptr, m.len)
            pos = cx_tree_seek(self.a.base, self.head.root[0], k.p, k.n, &exact)
            key_free(&k)
        finally:
            buf_close(&m)
        return pos

    def zset_at(self, uint64_t pos):
        """(member, score) at position pos in score order."""
        cdef cx_rec r
        if not cx_tree_get(self.base(), self.head.root[0], pos, &r):
            raise IndexError(pos)
        return rec_member(&r), read_score(r.v)

    def zset_range(self, uint64_t start, uint64_t stop, bint reverse=False):
        """(member, score) of positions [start, stop) in score order; reverse: from stop - 1
        down to start."""
        cdef cx_cursor cur
        cdef cx_rec r
        cdef list out = []
        cdef uint64_t n
        if start >= stop:
            return out
        n = stop - start
        if not cx_cursor_seek(&cur, self.base(), self.head.root[0], stop - 1 if reverse else start):
            return out
        while True:
            cx_cursor_rec(&cur, &r)
            out.append((rec_member(&r), read_score(r.v)))
            n -= 1
            if not n or not (cx_cursor_prev(&cur) if reverse else cx_cursor_next(&cur)):
                return out

    def zset_seek_score(self, double score, bint exclusive=False):
        """The position of the first member whose score is not below score (exclusive:
        above it)."""
        cdef uint8_t k[8]
        cdef int exact
        cdef uint64_t order = score_order(score)
        if exclusive:
            if order == <uint64_t>-1:
                return cx_tree_count(self.base(), self.head.root[0])
            order += 1
        put_be64(k, order)
        return cx_tree_seek(self.base(), self.head.root[0], k, 8, &exact)

    def zset_seek_lex(self, member, bint exclusive=False):
        """The position of the first member not below member (exclusive: above it), by
        binary search on members, as Redis's lex ranges assume one score for all."""
        cdef Buf m
        cdef cx_rec r
        cdef uint64_t lo = 0, hi = cx_tree_count(self.base(), self.head.root[0]), mid
        cdef Py_ssize_t n
        cdef int c
        buf_open(&m, member)
        try:
            while lo < hi:
                mid = lo + (hi - lo) // 2
                cx_tree_get(self.a.base, self.head.root[0], mid, &r)
                n = min(<Py_ssize_t>r.kl - 8, m.len)
                c = memcmp(r.k + 8, m.ptr, n) if n else 0
                if c == 0:
                    c = (r.kl - 8 > m.len) - (r.kl - 8 < m.len)
                if c < 0 or (exclusive and c == 0):
                    lo = mid + 1
                else:
                    hi = mid
        finally:
            buf_close(&m)
        return lo

    def zset_delete_range(self, uint64_t start, uint64_t stop):
        """The members at positions [start, stop) in score order removed; their count."""
        cdef cx_cursor cur
        cdef cx_rec r
        cdef Key mk
        cdef int exact
        cdef uint64_t pos
        cdef list members = []
        self._writable()
        stop = min(stop, cx_tree_count(self.base(), self.head.root[0]))
        if start >= stop:
            return 0
        if cx_cursor_seek(&cur, self.a.base, self.head.root[0], start):
            while True:
                cx_cursor_rec(&cur, &r)
                members.append(rec_member(&r))
                if <uint64_t>len(members) >= stop - start or not cx_cursor_next(&cur):
                    break
        cx_tree_delete_range(&self.txn, &self.head.root[0], start, stop)
        self._check()
        for member in members:
            self._member_key(<const uint8_t*>PyBytes_AS_STRING(member), PyBytes_GET_SIZE(member), &mk)
            pos = cx_tree_seek(self.a.base, self.head.root[1], mk.p, mk.n, &exact)
            key_free(&mk)
            if exact:
                cx_tree_delete_range(&self.txn, &self.head.root[1], pos, pos + 1)
                self._check()
        return len(members)

    def zset_encode_as(self, int encoding):
        """A sorted set just made starts in this encoding (Redis's zsetTypeCreate and
        zsetConvertToListpackIfNeeded decide it from the sizes the command knows)."""
        self._writable()
        self.head.flags = (self.head.flags & ~WIDE) | (WIDE if encoding == ENCODING_SKIPLIST else 0)

    def zset_scan(self, uint64_t cursor, Py_ssize_t count):
        """ZSCAN's step: (next cursor, [(member, score)]); a listpack answers whole in
        score order with cursor 0, a skiplist by member hash as set_scan does."""
        cdef cx_cursor cur
        cdef cx_rec r
        cdef uint8_t start[8]
        cdef int exact
        cdef uint64_t h, last = 0
        cdef list out = []
        if not (self.head.flags & WIDE):
            return 0, self.zset_range(0, cx_tree_count(self.base(), self.head.root[0]))
        put_be64(start, cursor)
        if not cx_cursor_seek(&cur, self.base(), self.head.root[1],
                              cx_tree_seek(self.a.base, self.head.root[1], start, 8, &exact)):
            return 0, out
        while True:
            cx_cursor_rec(&cur, &r)
            h = get_be64(r.k)
            if len(out) >= count and h != last:
                return h, out
            out.append((rec_member(&r), read_score(r.v)))
            last = h
            if not cx_cursor_next(&cur):
                return 0, out


cdef Collection new_collection(Keyspace ks, Arena a, uint64_t off, int type):
    cdef Collection c = Collection.__new__(Collection)
    c.store = ks
    c.a = a
    c.type = type
    c.off = off
    c.seed = CX_SB(a.base).hash_seed ^ MEMBER_SEED
    if off:
        c.head = cx_coll_of(CX_E(a.base, off))[0]
    else:
        memset(&c.head, 0, sizeof(c.head))
    return c


cdef Collection open_collection(Keyspace ks, Arena a, uint64_t off, int type, int db, unsigned pdb, object key,
                               bint replacing):
    """A write of the collection at off (0: to be created under key in pdb; replacing: and
    to replace whatever key holds then, or delete it if left empty)."""
    cdef Collection c = new_collection(ks, a, off, type)
    c.cfg = eviction_cfg(a)
    c.pdb = pdb
    c.store_db = db
    c.key = key
    c.replacing = replacing
    c.flags_at_start = c.head.flags
    if off:
        cx_pin(a.base, off)      # nothing it makes room for evicts it
    cx_txn_begin(&c.txn, a.base, &c.cfg, ks.tenant, cx_now_ms())
    c.writing = True
    return c


cdef int clone_collection(Arena a, unsigned tenant, uint64_t src, uint64_t fresh) except -1:
    """Reserved entry fresh gets a copy of collection src's trees (COPY)."""
    cdef cx_cfg cfg = eviction_cfg(a)
    cdef cx_txn t
    cdef cx_coll head = cx_coll_of(CX_E(a.base, src))[0]
    cdef uint64_t roots[2]
    cdef int i
    cx_txn_begin(&t, a.base, &cfg, tenant, cx_now_ms())
    for i in range(2):
        cx_tree_clone(&t, head.root[i], &roots[i])
    if t.err:
        cx_txn_abort(&t)
        if t.err == CX_TXN_NOMEM:
            raise MemoryError()
        raise_oom(a, tenant, head.bytes)
    head.root[0], head.root[1] = roots[0], roots[1]
    head.bytes = <uint64_t>t.bytes
    head.elems = <uint64_t>t.elems
    cx_coll_init(a.base, fresh, &head)
    cx_txn_commit(&t)
    return 0
