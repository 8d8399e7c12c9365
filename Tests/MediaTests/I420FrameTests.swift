import Media
import Testing

@Suite struct I420FrameTests {
    let red = YUVColor(red: 255, green: 0, blue: 0)
    let green = YUVColor(red: 0, green: 255, blue: 0)
    let blue = YUVColor(red: 0, green: 0, blue: 255)

    @Test func rgbConvertsToTheBT601ValuesLibyuvUses() {
        #expect(YUVColor(red: 0, green: 0, blue: 0) == YUVColor(y: 16, u: 128, v: 128))
        #expect(YUVColor(red: 255, green: 255, blue: 255) == YUVColor(y: 235, u: 128, v: 128))
        #expect(YUVColor(hex: "#ff0000") == red)
        #expect(YUVColor(hex: "nothex") == nil)
    }

    @Test func aFilledRectangleHasItsColourAndNothingElseChanges() {
        var frame = I420Frame(width: 64, height: 48, color: .black)
        frame.fill(PixelRect(x: 10, y: 8, width: 20, height: 10), with: red)
        #expect(frame.pixel(x: 15, y: 12) == red)
        #expect(frame.pixel(x: 5, y: 5) == .black)
        #expect(frame.pixel(x: 40, y: 30) == .black)
    }

    @Test func drawingScalesTheSourceIntoTheRectangle() {
        var canvas = I420Frame(width: 1280, height: 720, color: .black)
        var source = I420Frame(width: 640, height: 360, color: blue)
        source.fill(PixelRect(x: 320, y: 0, width: 320, height: 360), with: green)
        canvas.draw(source, at: PixelRect(x: 640, y: 360, width: 640, height: 360))
        #expect(canvas.pixel(x: 100, y: 100) == .black)
        #expect(canvas.pixel(x: 640 + 100, y: 360 + 100).isClose(to: blue, tolerance: 2))
        #expect(canvas.pixel(x: 640 + 500, y: 360 + 100).isClose(to: green, tolerance: 2))
        // Half the size: the source's halves land at half the offsets.
        canvas.draw(source, at: PixelRect(x: 0, y: 0, width: 320, height: 180))
        #expect(canvas.pixel(x: 60, y: 90).isClose(to: blue, tolerance: 2))
        #expect(canvas.pixel(x: 260, y: 90).isClose(to: green, tolerance: 2))
    }

    @Test func drawingPartlyOutsideTheCanvasIsClippedNotTrapped() {
        var canvas = I420Frame(width: 100, height: 100)
        canvas.draw(I420Frame(width: 50, height: 50, color: red), at: PixelRect(x: 80, y: 80, width: 50, height: 50))
        #expect(canvas.pixel(x: 90, y: 90).isClose(to: red, tolerance: 2))
        canvas.draw(I420Frame(width: 50, height: 50, color: red), at: PixelRect(x: 500, y: -500, width: 50, height: 50))
        #expect(canvas.pixel(x: 10, y: 10) == .black)
    }

    @Test func rotatingNinetyDegreesTurnsLandscapeIntoPortrait() {
        var frame = I420Frame(width: 1280, height: 720, color: .black)
        frame.fill(PixelRect(x: 0, y: 0, width: 100, height: 100), with: red)  // top left
        let turned = frame.rotated(.clockwise90)
        #expect(turned.width == 720 && turned.height == 1280)
        // Clockwise: the top left corner goes to the top right.
        #expect(turned.pixel(x: 719 - 10, y: 10) == red)
        #expect(turned.pixel(x: 10, y: 10) == .black)
        #expect(frame.rotated(.upsideDown).pixel(x: 1279 - 10, y: 719 - 10) == red)
    }

    @Test func mirroringSwapsLeftAndRight() {
        var frame = I420Frame(width: 64, height: 32, color: .black)
        frame.fill(PixelRect(x: 0, y: 0, width: 16, height: 32), with: green)
        let mirrored = frame.mirrored()
        #expect(mirrored.pixel(x: 60, y: 10) == green)
        #expect(mirrored.pixel(x: 2, y: 10) == .black)
    }

    @Test func croppingKeepsTheChosenPart() {
        var frame = I420Frame(width: 64, height: 64, color: .black)
        frame.fill(PixelRect(x: 32, y: 32, width: 32, height: 32), with: blue)
        let corner = frame.cropped(to: PixelRect(x: 32, y: 32, width: 32, height: 32))
        #expect(corner.width == 32 && corner.height == 32)
        #expect(corner.pixel(x: 0, y: 0) == blue)
    }

    @Test func packedPlanesOfTheWrongSizeAreRefused() {
        #expect(I420Frame(width: 4, height: 4, packed: [UInt8](repeating: 0, count: 24)) != nil)
        #expect(I420Frame(width: 4, height: 4, packed: [UInt8](repeating: 0, count: 23)) == nil)
        #expect(I420Frame(width: 0, height: 4, packed: []) == nil)
    }

    /// A picture in padded planes (as a decoder keeps it) draws, copied or scaled, exactly as its
    /// packed copy does, and copies back to it.
    @Test func aViewOfPaddedPlanesDrawsAsItsPackedCopy() {
        var source = I420Frame(width: 96, height: 64, color: blue)
        source.fill(PixelRect(x: 20, y: 10, width: 30, height: 40), with: red)
        source.fill(PixelRect(x: 60, y: 30, width: 20, height: 20), with: green)
        let padding = 24, (width, height) = (source.width, source.height)
        let (lumaStride, chromaStride) = (width + padding, source.chromaWidth + padding / 2)
        var luma = [UInt8](repeating: 0xEE, count: lumaStride * height)
        var u = [UInt8](repeating: 0xEE, count: chromaStride * source.chromaHeight), v = u
        for row in 0..<height { luma[row * lumaStride..<row * lumaStride + width] = source.data[row * width..<(row + 1) * width] }
        for row in 0..<source.chromaHeight {
            let from = source.lumaSize + row * source.chromaWidth
            u[row * chromaStride..<row * chromaStride + source.chromaWidth] = source.data[from..<from + source.chromaWidth]
            v[row * chromaStride..<row * chromaStride + source.chromaWidth] = source.data[from + source.chromaSize..<from + source.chromaSize + source.chromaWidth]
        }
        luma.withUnsafeBufferPointer { y in
            u.withUnsafeBufferPointer { u in
                v.withUnsafeBufferPointer { v in
                    guard let y = y.baseAddress, let u = u.baseAddress, let v = v.baseAddress else { return }
                    let view = I420PictureView(width: width, height: height, y: y, u: u, v: v, lumaStride: lumaStride, chromaStride: chromaStride)
                    #expect(I420Frame(copying: view, timestamp: source.timestamp) == source)
                    for (from, to) in [(nil, PixelRect(x: 8, y: 6, width: 96, height: 64)), (nil, PixelRect(x: 0, y: 0, width: 50, height: 30)),
                                       (PixelRect(x: 10, y: 10, width: 60, height: 40), PixelRect(x: 30, y: 20, width: 90, height: 60))] {
                        var fromView = I420Frame(width: 128, height: 96, color: .black), fromFrame = fromView
                        fromView.draw(view, from: from, at: to)
                        fromFrame.draw(source, from: from, at: to)
                        #expect(fromView == fromFrame, "\(String(describing: from)) to \(to)")
                    }
                }
            }
        }
    }
}
