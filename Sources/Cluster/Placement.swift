/// How many cores a host's rooms are expected to take, from the figures `tessera load` measured
/// on the 2-core development machine (release builds; docs/load.md, "Benchmarks", and
/// docs/cluster.md, where each number's source is given):
///
/// - a room: 0.25 cores before its guests (its composite drawn on the loop and its encoder
///   thread: a room of 4 video guests took 0.29 cores, of which 4 × 1.5 % are the guests');
/// - a guest who sends video: 1.5 % of a core (video rooms from 25 to 49 guests: 0.765 to 1.11
///   cores, 1.4 % a guest more);
/// - a guest without video, and a viewer: 0.15 % of a core (audio rooms from 200 to 500 guests:
///   0.366 to 0.828 cores, 0.154 % a guest more).
///
/// A host offers `usableShare` of its cores; what it can still take is that less the larger of
/// what it measured and what the model says of its rooms (the model covers rooms just opened,
/// whose guests have not sent anything yet; the measure covers whatever the model misses).
public struct CapacityModel: Sendable, Equatable {
    public var roomCores = 0.25
    public var videoGuestCores = 0.015
    public var audioGuestCores = 0.0015
    /// The share of the machine's cores a host offers: headroom for bursts and the machine.
    public var usableShare = 0.8

    public init() {}

    /// The cores `rooms` rooms with these guests are expected to take.
    public func modelledCores(rooms: Int, videoGuests: Int, otherGuests: Int) -> Double {
        Double(rooms) * roomCores + Double(videoGuests) * videoGuestCores + Double(otherGuests) * audioGuestCores
    }

    /// The cores a host of `cores` cores can still give: negative when it is over.
    public func spare(cores: Int, measuredCores: Double, modelledCores: Double) -> Double {
        Double(max(1, cores)) * usableShare - max(measuredCores, modelledCores)
    }
}

/// Where a new room goes: the documented rule (docs/cluster.md), as a pure function of the node
/// records Redis holds.
public enum Placement {
    /// Among live nodes (the records read: a node that stopped refreshing has none), those not
    /// draining and below their room limit; of them the one with the most spare capacity
    /// (`NodeRecord.spare`, less `pending` rooms placed on it since its record was written, at
    /// `model.roomCores` each); ties go to the name that sorts first, so every host choosing
    /// from the same records chooses the same node. Nil when no node may take a room.
    public static func choose(among nodes: [NodeRecord], pending: [String: Int] = [:], model: CapacityModel = CapacityModel()) -> NodeRecord? {
        func spare(_ node: NodeRecord) -> Double { node.spare - Double(pending[node.name] ?? 0) * model.roomCores }
        return nodes
            .filter { !$0.draining && $0.rooms.count + (pending[$0.name] ?? 0) < $0.maxRooms }
            .min { a, b in
                let (sa, sb) = (spare(a), spare(b))
                return sa != sb ? sa > sb : a.name < b.name
            }
    }
}
