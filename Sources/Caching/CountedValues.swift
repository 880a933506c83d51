/// Values kept once each under a small number, with a count of their holders: a value no one
/// holds any more is dropped and its number reused, so the store stays as large as what is
/// held, however many values come and go.
struct CountedValues<Value: Hashable> {
    private var values: [Value?] = []
    private var numbers: [Value: UInt32] = [:]
    private var uses: [Int] = []
    private var free: [UInt32] = []

    /// How many values are held.
    var count: Int { numbers.count }

    /// The number of `value`, counted as one more use; `inserted` when it was not held before.
    mutating func retain(_ value: Value) -> (number: UInt32, inserted: Bool) {
        if let number = numbers[value] {
            uses[Int(number)] += 1
            return (number, false)
        }
        let number: UInt32
        if let reused = free.popLast() {
            number = reused
            values[Int(number)] = value
            uses[Int(number)] = 1
        } else {
            number = UInt32(values.count)
            values.append(value)
            uses.append(1)
        }
        numbers[value] = number
        return (number, true)
    }

    /// One use of `number` fewer; returns its value when that was the last, and drops it.
    mutating func release(_ number: UInt32) -> Value? {
        uses[Int(number)] -= 1
        guard uses[Int(number)] == 0, let value = values[Int(number)] else { return nil }
        numbers[value] = nil
        values[Int(number)] = nil
        free.append(number)
        return value
    }

    func number(of value: Value) -> UInt32? { numbers[value] }

    /// The numbers of the held values that satisfy `condition`.
    func numbers(where condition: (Value) -> Bool) -> [UInt32] {
        numbers.compactMap { condition($0.key) ? $0.value : nil }
    }
}
