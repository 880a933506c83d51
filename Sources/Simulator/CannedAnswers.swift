/// The upstreams' answers in their own formats, written in one place: the simulator serves
/// them, and the tests' scripted upstreams send them.
public enum CannedAnswers {
    /// An Open-Meteo current-weather answer, laid out as the real API writes it (`time` is
    /// `yyyy-MM-ddTHH:mm` at `utcOffset` seconds east of UTC).
    public static func openMeteo(latitude: String, longitude: String, time: String, temperature: String, weatherCode: Int,
                                 utcOffset: Int = 0) -> String {
        "{\"latitude\":\(latitude),\"longitude\":\(longitude),\"generationtime_ms\":0.05,\"utc_offset_seconds\":\(utcOffset),"
            + "\"timezone\":\"GMT\",\"timezone_abbreviation\":\"GMT\",\"elevation\":38.0,"
            + "\"current_units\":{\"time\":\"iso8601\",\"interval\":\"seconds\",\"temperature_2m\":\"°C\",\"weather_code\":\"wmo code\"},"
            + "\"current\":{\"time\":\"\(time)\",\"interval\":900,\"temperature_2m\":\(temperature),\"weather_code\":\(weatherCode)}}"
    }

    /// A balance answer: `date` as `yyyy-MM-dd HH:mm:ss ±hhmm`.
    public static func balance(_ amount: String, date: String) -> String {
        "{\"balance\":\(amount),\"date\":\"\(date)\"}"
    }
}
